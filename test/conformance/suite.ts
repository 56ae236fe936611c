/**
 * The coordination conformance suite, written once and run against every backend:
 * `await describeConformance('redis')` in test/conformance/redis.test.ts is all a backend needs.
 * cases/tooz/ holds tooz's own test suite, ported with tooz's test names.
 */
import { describe } from 'node:test'
import type { Backend } from '../support/backends.js'
import { electionCases } from './cases/elections.js'
import { groupCases } from './cases/groups.js'
import { groupViewCases } from './cases/group-views.js'
import { leadershipCases } from './cases/leadership.js'
import { lockCases } from './cases/locks.js'
import { partitionerCases } from './cases/partitioner.js'
import { sharedLockCases } from './cases/shared-locks.js'
import { typedGroupCases } from './cases/typed-groups.js'
import { toozGroupCases } from './cases/tooz/api-groups.js'
import { toozLockCases } from './cases/tooz/api-locks.js'
import { toozWatchCases } from './cases/tooz/api-watch.js'
import { toozPartitionerCases } from './cases/tooz/partitioner.js'
import { userCodeCases } from './cases/user-code.js'
import { watcherCases } from './cases/watchers.js'
import { harness } from './harness.js'

/** Registers every conformance case for one backend. */
export async function describeConformance(name: Backend): Promise<void> {
  const h = await harness(name)
  describe(`${name} conformance`, { concurrency: 6 }, () => {
    groupCases(h)
    watcherCases(h)
    groupViewCases(h)
    electionCases(h)
    leadershipCases(h)
    lockCases(h)
    sharedLockCases(h)
    partitionerCases(h)
    userCodeCases(h)
    typedGroupCases(h)
  })
  // tooz's own tests (test_coordination.py TestAPI, test_partitioner.py), ported case by case.
  describe(`${name} tooz conformance`, { concurrency: 6 }, () => {
    toozGroupCases(h)
    toozWatchCases(h)
    toozLockCases(h)
    toozPartitionerCases(h)
  })
}
