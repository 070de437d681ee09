import protobuf from 'protobufjs';

/**
 * The log groups of SLS and CLS as field lists, written with protobufjs's Writer (the library
 * that also serves gRPC transcoding): varints, strings and embedded messages. A repeated field is
 * the same field number listed once per value, exactly as it goes on the wire; `undefined` values
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
  const writer = protobuf.Writer.create();
  write(writer, msg);
  const bytes = writer.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function write(writer: protobuf.Writer, msg: ProtoMessage): void {
  for (const [number, value] of msg.fields) {
    if (value === undefined) continue;
    if (typeof value === 'number') {
      // uint64: millisecond timestamps are past 2^32.
      writer.uint32(number * 8).uint64(value);
    } else if (typeof value === 'string') {
      writer.uint32(number * 8 + 2).string(value);
    } else {
      writer.uint32(number * 8 + 2).fork();
      write(writer, value);
      writer.ldelim();
    }
  }
}

/** A log entry as the string key/value contents both services store: nested values as JSON text. */
export function contents(entry: Record<string, unknown>): [string, string][] {
  return Object.entries(entry).map(([key, value]) => [
    key,
    typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value),
  ]);
}
