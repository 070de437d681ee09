import {
  ROOT_CONTEXT,
  SeverityNumber,
  trace,
  type AnyValue,
  type Logger,
  type Span,
} from '@opentelemetry/api';

/** pino's numeric levels → OTLP severity (logs data model, "Mapping of SeverityNumber"). */
const SEVERITY: Record<number, [SeverityNumber, string]> = {
  10: [SeverityNumber.TRACE, 'TRACE'],
  20: [SeverityNumber.DEBUG, 'DEBUG'],
  30: [SeverityNumber.INFO, 'INFO'],
  40: [SeverityNumber.WARN, 'WARN'],
  50: [SeverityNumber.ERROR, 'ERROR'],
  60: [SeverityNumber.FATAL, 'FATAL'],
};

/** A log field as an OTLP attribute: scalars as they are, anything nested as its JSON text. */
function attributeValue(value: unknown): AnyValue {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  return JSON.stringify(value);
}

/**
 * The gateway's pino records as OTLP log records: handed each JSON line pino writes (a stream
 * beside stdout), it emits one record with the level, the message as body and the other fields
 * as attributes. pino writes synchronously inside the logging call, so `current()` names the
 * span of the node running at that moment; its trace and span ids go on the record.
 */
export class PinoLogBridge {
  readonly #logger: Logger;
  readonly #current: () => Span | undefined;

  constructor(logger: Logger, current: () => Span | undefined) {
    this.#logger = logger;
    this.#current = current;
  }

  readonly write = (chunk: string): void => {
    for (const line of chunk.split('\n')) if (line !== '') this.#emit(line);
  };

  #emit(line: string): void {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      this.#logger.emit({ body: line });
      return;
    }
    const { level, time, msg, pid: _pid, hostname: _host, ...fields } = record;
    const [severityNumber, severityText] = SEVERITY[Number(level)] ?? [
      SeverityNumber.UNSPECIFIED,
      String(level),
    ];
    const attributes: Record<string, AnyValue> = {};
    for (const [key, value] of Object.entries(fields)) attributes[key] = attributeValue(value);
    const span = this.#current();
    this.#logger.emit({
      severityNumber,
      severityText,
      body: typeof msg === 'string' ? msg : '',
      attributes,
      ...(typeof time === 'number' ? { timestamp: time } : {}),
      ...(span === undefined ? {} : { context: trace.setSpan(ROOT_CONTEXT, span) }),
    });
  }
}

/** One access-log record (the JSON line's fields as attributes) tied to the request's span. */
export function emitAccessRecord(
  logger: Logger,
  fields: Record<string, unknown>,
  span: Span | undefined,
): void {
  const attributes: Record<string, AnyValue> = { 'log.type': 'access' };
  for (const [key, value] of Object.entries(fields))
    if (value !== null) attributes[key] = attributeValue(value);
  logger.emit({
    severityNumber: SeverityNumber.INFO,
    severityText: 'INFO',
    body: `${String(fields.method)} ${String(fields.path)} ${String(fields.status)}`,
    attributes,
    ...(span === undefined ? {} : { context: trace.setSpan(ROOT_CONTEXT, span) }),
  });
}
