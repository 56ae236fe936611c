/**
 * tooz's TestHook (tooz/tests/test_coordination.py), listed so that the port of tooz's suite is
 * complete: both cases test tooz.coordination.Hooks, the private list behind its watch callbacks,
 * which rollcall does not have. Adding, running and removing watch callbacks is covered by the
 * ported TestAPI watch cases (test/conformance/cases/tooz/api-watch.ts), on every backend.
 */
import { describe, it } from 'node:test'

const WHY =
  "tests tooz.coordination.Hooks, tooz's private callback list, which rollcall has no counterpart of; the TestAPI watch cases cover registering, running "
  + 'and removing callbacks'

describe('unit: tooz TestHook', () => {
  it('TestHook.test_register_hook', { skip: WHY }, () => {})
  it('TestHook.test_unregister_hook', { skip: WHY }, () => {})
})
