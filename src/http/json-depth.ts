// How deeply a JSON text nests, measured on the raw bytes before anything parses it: deep
// nesting makes recursive parsers and validators overflow the stack, so both transports
// refuse it up front (MAX_JSON_DEPTH). O(length), no allocation.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x5b, 0x7b]); // [ {
const CLOSERS = new Set([0x5d, 0x7d]); // ] }

/** True when arrays/objects in `json` nest deeper than `max` (strings are skipped). */
export function jsonNestsDeeperThan(json: string | Uint8Array, max: number): boolean {
  // Multi-byte UTF-8 sequences never contain these ASCII bytes, so bytes and chars scan alike.
  const at = typeof json === 'string' ? (i: number) => json.charCodeAt(i) : (i: number) => json[i]!;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (OPENERS.has(c)) {
      if (++depth > max) return true;
    } else if (CLOSERS.has(c)) {
      depth--;
    }
  }
  return false;
}
