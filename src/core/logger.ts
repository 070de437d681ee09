import { Writable } from 'node:stream';
import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';

export type Logger = PinoLogger;

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/**
 * RUST_LOG (the reference's variable) and SWITCHYARD_LOG override the configured
 * level. Filter syntax like `gateway=debug,info` is reduced to its last bare level.
 */
export function effectiveLevel(configured: string, env: NodeJS.ProcessEnv = process.env): LevelWithSilent {
  const override = env.SWITCHYARD_LOG ?? env.RUST_LOG;
  const candidates = [
    ...(override ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .reverse(),
    configured.toLowerCase(),
  ];
  for (const c of candidates) {
    const level = c.includes('=') ? c.slice(c.indexOf('=') + 1) : c;
    if (LEVELS.has(level)) return level as LevelWithSilent;
  }
  return 'info';
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Turns pino's JSON lines into `time LEVEL msg key=value…` for `format: text`. */
function textDestination(out: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line === '') continue;
        try {
          const {
            time,
            level,
            msg,
            pid: _pid,
            hostname: _host,
            ...rest
          } = JSON.parse(line) as Record<string, unknown>;
          const fields = Object.entries(rest)
            .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join(' ');
          const stamp = new Date(Number(time)).toISOString();
          out.write(
            `${stamp} ${LEVEL_NAMES[Number(level)] ?? String(level)} ${typeof msg === 'string' ? msg : ''}${fields ? ' ' + fields : ''}\n`,
          );
        } catch {
          out.write(line + '\n');
        }
      }
      done();
    },
  });
}

/** `tee` also receives every record as a JSON line (the OTLP log export, src/telemetry/). */
export function createLogger(
  options: { level: string; format: string },
  tee?: { write(line: string): void },
): Logger {
  const level = effectiveLevel(options.level);
  const base = { level, base: null, timestamp: pino.stdTimeFunctions.epochTime } as const;
  const out =
    options.format === 'json' ? pino.destination({ fd: 1, sync: false }) : textDestination(process.stdout);
  if (tee === undefined || level === 'silent') return pino(base, out);
  return pino(
    base,
    pino.multistream([
      { level, stream: out },
      { level, stream: tee },
    ]),
  );
}

/** A logger that drops everything; for tests and tools. */
export const silentLogger: Logger = pino({ level: 'silent' });
