/**
 * The `grpc-timeout` request header (gRPC over HTTP/2: `TimeoutValue
 * TimeoutUnit`, at most 8 digits, units H M S m u n), read and written in
 * milliseconds. docs/grpc.md, "Deadlines".
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/** Milliseconds of a `grpc-timeout` value; undefined when absent or malformed. */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return undefined;
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

const MAX_VALUE = 99_999_999;

/** A `grpc-timeout` value for `ms` (rounded up to whole milliseconds, at least 1). */
export function formatGrpcTimeout(ms: number): string {
  const whole = Math.max(1, Math.ceil(ms));
  if (whole <= MAX_VALUE) return `${whole}m`;
  return `${Math.min(MAX_VALUE, Math.ceil(whole / 1000))}S`;
}
