// A deliberately tiny logger for the plugin path: one synchronous append per line (the process lives for
// milliseconds, so buffering would only lose lines on a crash). Never writes to stdout, which carries the
// CNI result, and masks anything that looks like a credential. Values in a line may come from a tenant's config:
// control characters are escaped, so one call is always one line and a tenant cannot forge lines or file content.
import type { LogLevel } from '../config/types.ts';
import { appendLine } from '../fs/append-line.ts';
import { UnsafeFileError } from '../fs/unsafe-file.ts';
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
  /** Where lines go when there is no file (and the complaint when the file cannot be written); default stderr. */
  readonly stderr?: (text: string) => void;
}

const secretPattern =
  /("?(?:token|password|client-key-data|client-certificate-data|bearer)"?\s*[:=]\s*"?)[^",\s}]+/gi;

/** Masks credential-looking values so that a logged config or error can never leak a token. */
export function redact(text: string): string {
  return text.replace(secretPattern, '$1***').replace(/(Bearer\s+)\S+/g, '$1***');
}

// C0, DEL, C1 and the Unicode line/paragraph separators: anything a terminal or a log reader could take for a break.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** `text` with every control character written as a visible escape (\n, \t, \u001b...). */
export function escapeControl(text: string): string {
  return text.replace(CONTROL, (ch) => {
    switch (ch) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = rank[options.level ?? 'info'];
  const prefix = options.context === undefined ? '' : ` ${options.context}`;
  const stderr = options.stderr ?? ((text: string) => writeFd(2, text));
  const write = (level: LogLevel, msg: string): void => {
    if (rank[level] < threshold) return;
    const line = `${new Date().toISOString()} [${level}]${escapeControl(prefix)} ${escapeControl(redact(msg))}\n`;
    if (options.file === undefined) {
      stderr(line);
      return;
    }
    try {
      appendLine(options.file, line);
    } catch (err) {
      // An unwritable log file must not fail the CNI call; say so on stderr instead.
      const why = err instanceof UnsafeFileError ? err.reason : `cannot be written (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
      stderr(`hereabouts: log_file ${escapeControl(JSON.stringify(options.file))} ${why}\n${line}`);
    }
  };
  return {
    debug: (m) => write('debug', m),
    info: (m) => write('info', m),
    warning: (m) => write('warning', m),
    error: (m) => write('error', m),
  };
}
