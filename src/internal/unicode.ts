/**
 * Text checks shared by the codec and the drivers.
 * @internal
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** True when `text` holds a UTF-16 surrogate without its pair, which has no UTF-8 form. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text)
}

/** UTF-8 decoding that throws a TypeError on malformed bytes instead of replacing them: stored ids and names must round-trip exactly. */
export const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
