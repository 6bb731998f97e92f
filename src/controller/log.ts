// Structured logs of the controller: one JSON object per line on stderr ({time, level, msg, ...fields}), the form
// log collectors index without a parser. Messages and string fields pass through the plugin's redaction, so a
// logged error can never carry a bearer token.
import { redact } from '../cni/log.ts';

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

export interface Log {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warning(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warning', 'error'];

export function jsonLog(options: { level: LogLevel; write?: (line: string) => void }): Log {
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const threshold = rank[options.level];
  const emit = (level: LogLevel, msg: string, fields: LogFields = {}): void => {
    if (rank[level] < threshold) return;
    const entry: Record<string, string | number | boolean> = { time: new Date().toISOString(), level, msg: redact(msg) };
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) entry[key] = typeof value === 'string' ? redact(value) : value;
    }
    write(`${JSON.stringify(entry)}\n`);
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warning: (msg, fields) => emit('warning', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

/** The message of anything thrown, for a log line. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
