// The one log line format of every mode (CNI plugin, controller, installer): a JSON object per line,
//   {"time":"<RFC 3339>","level":"<level>","mode":"cni|controller|install","msg":"...", ...fields}
// which log collectors index without a parser and `jq` reads on a node. Messages and string fields are redacted
// (a credential never reaches a log), and every control character is escaped (JSON escapes C0; DEL, C1 and the
// Unicode line separators are escaped here), so one call is one line and a value a tenant chose cannot forge a line.
// Pure and dependency-free: the plugin's hot path loads it.

export type LogMode = 'cni' | 'controller' | 'install';

export type LogFields = Readonly<Record<string, string | number | boolean | undefined>>;

const secretPattern = /("?(?:token|password|client-key-data|client-certificate-data|bearer)"?\s*[:=]\s*"?)[^",\s}]+/gi;

/** Masks credential-looking values so that a logged config or error can never leak a token. */
export function redact(text: string): string {
  return text.replace(secretPattern, '$1***').replace(/(Bearer\s+)\S+/g, '$1***');
}

// C0, DEL, C1 and the Unicode line/paragraph separators: anything a terminal or a log reader could take for a break.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
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

// After JSON.stringify only these can remain raw (it escapes C0 itself); \uXXXX is valid JSON for them.
const LEFT_RAW = /[\u007f-\u009f\u2028\u2029]/g;

export function logLine(
  level: string,
  mode: LogMode,
  msg: string,
  fields: LogFields = {},
  now: Date = new Date(),
): string {
  const entry: Record<string, string | number | boolean> = { time: now.toISOString(), level, mode, msg: redact(msg) };
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && !(key in entry)) entry[key] = typeof value === 'string' ? redact(value) : value;
  }
  return `${JSON.stringify(entry).replace(LEFT_RAW, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}
