/**
 * Python's str() of a JavaScript value, for the Partitioner: tooz places an object by
 * `str(obj).encode('utf8')`, so a Node member and a Python member agree on an object's owner only
 * if both spell it the same way. The mapping from JavaScript to Python values is the one msgpack
 * (and oslo.serialization) uses: a safe integer (or bigint) is an int, any other number a float,
 * true/false/null/undefined are True/False/None, a Uint8Array is bytes, an array a list, a Map or
 * a plain object a dict (in insertion order). A string is itself at top level and its repr inside
 * a container. Sets (whose order Python does not fix) and other objects fall back to String().
 * Bytes alone are spelt for the Redis driver too: tooz ≤ 8 put their repr in its lock keys.
 */

/** str(value) as Python prints it. */
export function pythonStr(value: unknown): string {
  return typeof value === 'string' ? value : pythonRepr(value)
}

/** repr(value) as Python prints it. */
export function pythonRepr(value: unknown): string {
  if (typeof value === 'string') return strRepr(value)
  if (value === true) return 'True'
  if (value === false) return 'False'
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'number') return numberRepr(value)
  if (value instanceof Uint8Array) return pythonBytesRepr(value)
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`
  if (value instanceof Map) return dictRepr([...value.entries()])
  if (typeof value === 'object' && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    return dictRepr(Object.entries(value as Record<string, unknown>))
  }
  return String(value)
}

function dictRepr(entries: [unknown, unknown][]): string {
  return `{${entries.map(([k, v]) => `${pythonRepr(k)}: ${pythonRepr(v)}`).join(', ')}}`
}

/** A safe integer is a Python int; anything else a float, printed as repr(float) does (shortest round trip). */
function numberRepr(n: number): string {
  if (Number.isSafeInteger(n)) return String(n === 0 ? 0 : n)
  if (Number.isNaN(n)) return 'nan'
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf'
  // toExponential() with no argument gives the shortest digits that round-trip, as repr does.
  const [mantissa, expText] = Math.abs(n).toExponential().split('e') as [string, string]
  const digits = mantissa.replace('.', '')
  const exp = Number(expText)
  const sign = n < 0 ? '-' : ''
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`
    const whole = digits.slice(0, exp + 1).padEnd(exp + 1, '0')
    const fraction = digits.slice(exp + 1)
    return `${sign}${whole}.${fraction === '' ? '0' : fraction}`
  }
  const rest = digits.slice(1)
  return `${sign}${digits[0]}${rest ? `.${rest}` : ''}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`
}

/**
 * Python's `str(some_bytes)` (= its repr): `b'...'` with `\\`, the quote, `\t`, `\n`, `\r` and every
 * byte outside printable ASCII escaped. The quote is `"` when the bytes hold `'` but no `"`.
 */
export function pythonBytesRepr(bytes: Uint8Array): string {
  const quote = bytes.includes(0x27) && !bytes.includes(0x22) ? '"' : "'"
  let out = ''
  for (const b of bytes) {
    if (b === 0x5c) out += '\\\\'
    else if (b === quote.charCodeAt(0)) out += `\\${quote}`
    else if (b === 0x09) out += '\\t'
    else if (b === 0x0a) out += '\\n'
    else if (b === 0x0d) out += '\\r'
    else if (b < 0x20 || b >= 0x7f) out += `\\x${b.toString(16).padStart(2, '0')}`
    else out += String.fromCharCode(b)
  }
  return `b${quote}${out}${quote}`
}

/** Characters Python's str.isprintable() refuses (besides the space, which it accepts). */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u

function strRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'"
  let out = ''
  for (const ch of s) {
    const cp = ch.codePointAt(0)!
    if (ch === '\\') out += '\\\\'
    else if (ch === quote) out += `\\${quote}`
    else if (ch === '\t') out += '\\t'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`
    else if (cp < 0x7f || ch === ' ' || !NOT_PRINTABLE.test(ch)) out += ch
    else if (cp < 0x100) out += `\\x${cp.toString(16).padStart(2, '0')}`
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`
    else out += `\\U${cp.toString(16).padStart(8, '0')}`
  }
  return `${quote}${out}${quote}`
}
