/** How an application's client of the wrong kind is named in messages. */

/** "a Pool", "an object": what the value seems to be, for messages. */
export function kindOf(value: unknown): string {
  const name = (value as { constructor?: { name?: unknown } } | null)?.constructor?.name
  const what = typeof name === 'string' && name !== '' && name !== 'Object' ? name : typeof value
  return `${/^[aeiou]/i.test(what) ? 'an' : 'a'} ${what}`
}
