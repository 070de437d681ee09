/**
 * Just enough protobuf encoding for the log groups of SLS and CLS: varints,
 * strings and embedded messages. A repeated field is the same field number
 * listed once per value, exactly as it goes on the wire; `undefined` values
 * (unset optional fields) are skipped.
 */
export type ProtoField = readonly [number, string | number | ProtoMessage | undefined];

export interface ProtoMessage {
  readonly fields: readonly ProtoField[];
}

export function message(fields: readonly ProtoField[]): ProtoMessage {
  return { fields };
}

export function encodeMessage(msg: ProtoMessage): Buffer {
  const parts: Buffer[] = [];
  for (const [number, value] of msg.fields) {
    if (value === undefined) continue;
    if (typeof value === 'number') {
      parts.push(varint(number * 8), varint(value));
      continue;
    }
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : encodeMessage(value);
    parts.push(varint(number * 8 + 2), varint(bytes.length), bytes);
  }
  return Buffer.concat(parts);
}

/** Unsigned LEB128 for non-negative integers up to 2^53 (millisecond timestamps fit). */
function varint(value: number): Buffer {
  const bytes: number[] = [];
  let v = value;
  while (v >= 0x80) {
    bytes.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  bytes.push(v);
  return Buffer.from(bytes);
}

/** A log entry as the string key/value contents both services store: nested values as JSON text. */
export function contents(entry: Record<string, unknown>): [string, string][] {
  return Object.entries(entry).map(([key, value]) => [
    key,
    typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value),
  ]);
}
