/**
 * "Did you mean …?" for a misspelt name: one helper for every place a name is looked up among
 * known ones (URL options, connect() options, INI settings), so that one typo gets one suggestion
 * wherever it is written.
 * @internal
 */

/** Levenshtein distance between `a` and `b` (insertions, deletions and substitutions). */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
  }
  return d[a.length]![b.length]!
}

/** A name as compared: case and separators (`_`, `-`) do not count, so `watchInterval` is near `watch_interval`. */
function folded(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '')
}

/**
 * The known name closest to `name`, or undefined when none is close: within 2 edits, or a fifth
 * of the name's length for long names, case and separators aside. Ties go to the first in `known`.
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  const target = folded(name)
  const limit = Math.max(2, Math.floor(target.length / 5))
  let best: string | undefined
  let bestDistance = limit + 1
  for (const k of known) {
    const f = folded(k)
    if (Math.abs(f.length - target.length) >= bestDistance) continue
    const d = editDistance(f, target)
    if (d < bestDistance) {
      best = k
      bestDistance = d
    }
  }
  return best
}

/** ` (did you mean x?)`, to follow an unknown name in a message; '' when nothing is `near`. */
export function didYouMean(near: string | undefined): string {
  return near === undefined ? '' : ` (did you mean ${near}?)`
}
