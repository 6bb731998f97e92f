// Structured logs of the controller and the installer: the JSON lines of every mode on stderr
// ({time, level, mode, msg, ...fields}; src/log/line.ts), redacted, so a logged error never carries a bearer token.
import { logLine, type LogFields, type LogMode } from './line.ts';

export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export type { LogFields };

export interface Log {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warning(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warning', 'error'];

export function jsonLog(options: { level: LogLevel; mode?: LogMode; write?: (line: string) => void }): Log {
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const threshold = rank[options.level];
  const emit = (level: LogLevel, msg: string, fields: LogFields = {}): void => {
    if (rank[level] < threshold) return;
    write(logLine(level, options.mode ?? 'controller', msg, fields));
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warning: (msg, fields) => emit('warning', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

/** The message of anything thrown, for a log line. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
