// A deliberately tiny logger for the plugin path: one synchronous append per line (the process lives for
// milliseconds, so buffering would only lose lines on a crash). Never writes to stdout, which carries the
// CNI result. Lines are the JSON lines of every mode (src/log/line.ts): redacted, control characters escaped, so
// one call is always one line and a value from a tenant's config cannot forge lines or file content.
import { appendLine } from '../fs/append-line.ts';
import { UnsafeFileError } from '../fs/unsafe-file.ts';
import { escapeControl, logLine, type LogFields } from './line.ts';
import { writeFd } from '../fs/fd-write.ts';

/** Whereabouts' log_level values. */
export type PluginLogLevel = 'debug' | 'verbose' | 'info' | 'warning' | 'error' | 'panic';

const rank: Record<PluginLogLevel, number> = { debug: 0, verbose: 1, info: 2, warning: 3, error: 4, panic: 5 };

export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warning(msg: string): void;
  error(msg: string): void;
}

export interface LoggerOptions {
  /** Append to this file; stderr when absent. */
  readonly file?: string;
  readonly level?: PluginLogLevel;
  /** Fields of every line (e.g. the verb, container id and interface). */
  readonly context?: LogFields;
  /** Where lines go when there is no file (and the complaint when the file cannot be written); default stderr. */
  readonly stderr?: (text: string) => void;
}

export { escapeControl, redact } from './line.ts';

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = rank[options.level ?? 'info'];
  const stderr = options.stderr ?? ((text: string) => writeFd(2, text));
  const write = (level: PluginLogLevel, msg: string): void => {
    if (rank[level] < threshold) return;
    const line = logLine(level, 'cni', msg, options.context);
    if (options.file === undefined) {
      stderr(line);
      return;
    }
    try {
      appendLine(options.file, line);
    } catch (err) {
      // An unwritable log file must not fail the CNI call; say so on stderr instead.
      const why =
        err instanceof UnsafeFileError
          ? err.reason
          : `cannot be written (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
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
