// A deliberately tiny logger for the plugin path: one synchronous append per line (the process lives for
// milliseconds, so buffering would only lose lines on a crash). Never writes to stdout, which carries the
// CNI result, and masks anything that looks like a credential.
import { appendFileSync } from 'node:fs';
import type { LogLevel } from '../config/types.ts';
import { writeFd } from './fd-write.ts';

const rank: Record<LogLevel, number> = { debug: 0, verbose: 1, info: 2, warning: 3, error: 4, panic: 5 };

export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
}

export interface LoggerOptions {
  /** Append to this file; stderr when absent. */
  readonly file?: string;
  readonly level?: LogLevel;
  /** Prefixed to every line (e.g. the verb and container id). */
  readonly context?: string;
}

const secretPattern =
  /("?(?:token|password|client-key-data|client-certificate-data|bearer)"?\s*[:=]\s*"?)[^",\s}]+/gi;

/** Masks credential-looking values so that a logged config or error can never leak a token. */
export function redact(text: string): string {
  return text.replace(secretPattern, '$1***').replace(/(Bearer\s+)\S+/g, '$1***');
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = rank[options.level ?? 'info'];
  const prefix = options.context === undefined ? '' : ` ${options.context}`;
  const write = (level: LogLevel, msg: string): void => {
    if (rank[level] < threshold) return;
    const line = `${new Date().toISOString()} [${level}]${prefix} ${redact(msg)}\n`;
    if (options.file === undefined) {
      writeFd(2, line);
      return;
    }
    try {
      appendFileSync(options.file, line, { mode: 0o600 });
    } catch (err) {
      // An unwritable log file must not fail the CNI call; say so once on stderr instead.
      writeFd(2, `hereabouts: cannot write log_file ${options.file}: ${(err as Error).message}\n${line}`);
    }
  };
  return {
    debug: (m) => write('debug', m),
    info: (m) => write('info', m),
    warning: (m) => write('warning', m),
    error: (m) => write('error', m),
  };
}
