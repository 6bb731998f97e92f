// The node agent's wire format, one request and one answer per connection, each a length-prefixed frame:
//   request: u32 total length | u32 header length | header JSON {v, env, giveUpAt, pidns?} | the stdin bytes, as sent
//   answer:  u32 length | JSON {v, code, stdout, stderr, wallMs?, cpuMs?}, or {v, refused} for a call not run
// Lengths are big-endian. Only Buffer is used here: the client (src/agent/client.ts) must stay tiny.

export const PROTOCOL_VERSION = 1;
/** Header + stdin: stdin is itself capped at 1 MiB (src/cni/stdin.ts), the environment at 64 KiB. */
export const MAX_REQUEST_BYTES = 1024 * 1024 + 64 * 1024;
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * The variables forwarded from the plugin's environment: every CNI_* variable (the request), and those the plugin
 * reads besides (node name, the operator's allowed directories). Nothing else reaches the agent.
 */
export const FORWARDED_ENV: readonly string[] = ['NODENAME', 'HEREABOUTS_ALLOWED_DIRS'];

export interface AgentRequest {
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: Buffer;
  /** When the client stops waiting (epoch ms, same host): a call not started by then is not started at all. */
  readonly giveUpAt: number;
  /** The client's pid namespace (`readlink /proc/self/ns/pid`); absent when it could not tell. */
  readonly pidns?: string;
}

export interface AgentAnswer {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The agent's own time for this request (for HEREABOUTS_TIMINGS): wall and process CPU, in ms. */
  readonly wallMs?: number;
  readonly cpuMs?: number;
}

/** The agent did not run the call, and says why: the client runs it itself. */
export interface AgentRefusal {
  readonly refused: string;
}

/** The variables of `env` that the agent receives (see FORWARDED_ENV). */
export function forwardedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (name.startsWith('CNI_') || FORWARDED_ENV.includes(name))) out[name] = value;
  }
  return out;
}

export function encodeRequest(req: AgentRequest): Buffer {
  const fields = { v: PROTOCOL_VERSION, env: req.env, giveUpAt: req.giveUpAt, pidns: req.pidns };
  const header = Buffer.from(JSON.stringify(fields), 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32BE(4 + header.length + req.stdin.length, 0);
  prefix.writeUInt32BE(header.length, 4);
  return Buffer.concat([prefix, header, req.stdin]);
}

/** The request in `body` (the frame without its first length), or a RangeError saying what is malformed. */
export function decodeRequestFrame(body: Buffer): AgentRequest {
  if (body.length < 4) throw new RangeError('request frame is shorter than its header length');
  const headerLength = body.readUInt32BE(0);
  if (headerLength > body.length - 4) throw new RangeError(`request header length ${headerLength} exceeds the frame`);
  let header: unknown;
  try {
    header = JSON.parse(body.subarray(4, 4 + headerLength).toString('utf8'));
  } catch {
    throw new RangeError('request header is not JSON');
  }
  if (typeof header !== 'object' || header === null) throw new RangeError('request header is not an object');
  const { v, env, giveUpAt, pidns } = header as { v?: unknown; env?: unknown; giveUpAt?: unknown; pidns?: unknown };
  if (v !== PROTOCOL_VERSION)
    throw new RangeError(`request protocol version ${JSON.stringify(v)} is not ${PROTOCOL_VERSION}`);
  if (typeof env !== 'object' || env === null || Array.isArray(env))
    throw new RangeError('request env is not an object');
  if (typeof giveUpAt !== 'number' || !Number.isFinite(giveUpAt))
    throw new RangeError('request giveUpAt is not a time');
  if (pidns !== undefined && typeof pidns !== 'string') throw new RangeError('request pidns is not a string');
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== 'string') throw new RangeError(`request env ${JSON.stringify(name)} is not a string`);
    clean[name] = value;
  }
  // Only what a client may forward, whatever a client sent.
  return {
    env: forwardedEnv(clean),
    stdin: Buffer.from(body.subarray(4 + headerLength)),
    giveUpAt,
    ...(pidns === undefined ? {} : { pidns }),
  };
}

export function encodeAnswer(answer: AgentAnswer | AgentRefusal): Buffer {
  const body = Buffer.from(JSON.stringify({ v: PROTOCOL_VERSION, ...answer }), 'utf8');
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(body.length, 0);
  return Buffer.concat([prefix, body]);
}

/** The answer (or the refusal) in `body`, or a RangeError. */
export function decodeAnswerFrame(body: Buffer): AgentAnswer | AgentRefusal {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new RangeError('answer is not JSON');
  }
  if (typeof doc !== 'object' || doc === null) throw new RangeError('answer is not an object');
  const { v, code, stdout, stderr, wallMs, cpuMs, refused } = doc as Record<string, unknown>;
  if (v === PROTOCOL_VERSION && typeof refused === 'string') return { refused };
  if (v !== PROTOCOL_VERSION || !Number.isInteger(code) || typeof stdout !== 'string' || typeof stderr !== 'string') {
    throw new RangeError('answer lacks v, code, stdout or stderr');
  }
  return {
    code: code as number,
    stdout,
    stderr,
    ...(typeof wallMs === 'number' ? { wallMs } : {}),
    ...(typeof cpuMs === 'number' ? { cpuMs } : {}),
  };
}

/**
 * Collects one length-prefixed frame from chunks. `push` returns the frame's body once complete (bytes past it are
 * an error: one frame per connection), undefined while incomplete, and throws a RangeError for a frame over `max`.
 */
export class FrameReader {
  readonly #max: number;
  #chunks: Buffer[] = [];
  #size = 0;
  #expected: number | undefined;

  constructor(max: number) {
    this.#max = max;
  }

  push(chunk: Buffer): Buffer | undefined {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#expected === undefined) {
      if (this.#size < 4) return undefined;
      const all = Buffer.concat(this.#chunks);
      this.#chunks = [all];
      this.#expected = all.readUInt32BE(0);
      if (this.#expected > this.#max) throw new RangeError(`frame of ${this.#expected} bytes exceeds ${this.#max}`);
    }
    if (this.#size < 4 + this.#expected) return undefined;
    if (this.#size > 4 + this.#expected) throw new RangeError('bytes after the frame');
    return Buffer.concat(this.#chunks).subarray(4);
  }
}
