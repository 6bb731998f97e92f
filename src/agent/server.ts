// The node agent: the plugin, hosted. Each connection carries one CNI call (frame.ts); the agent runs it through the
// very runPlugin() a plugin process runs — same validation, trust checks, file locks and node cache — with the
// forwarded environment and stdin, and answers with what the process would have printed and its exit code.
// What stays across calls is only what makes them cheap: loaded code, open API connections (connection-pool.ts) and
// the contention its writes met on shared pools (contention.ts), which the agent owns and hands to every call
// (store/kubernetes/open.ts, StoreHost).
import { createServer, type Socket } from 'node:net';
import { writeError } from '../cni/output.ts';
import { runPlugin } from '../cni/plugin.ts';
import { monotonicMs } from '../clock.ts';
import { KeyedQueue } from '../store/keyed-queue.ts';
import type { StoreHost } from '../store/open.ts';
import type { NodePodsStats, WarmOptions, WarmStats } from '../store/kubernetes/open.ts';
import {
  decodeRequestFrame,
  encodeAnswer,
  FrameReader,
  MAX_REQUEST_BYTES,
  type AgentAnswer,
  type AgentRequest,
} from './frame.ts';
import { listenAt, prepareSocketPath, removeOwnSocket } from './socket-file.ts';
import { writeJournalPointer } from './journal-pointer.ts';
import { unansweredJson } from './unanswered.ts';
import { PidNamespaceGate } from './pid-namespace.ts';

export interface AgentOptions {
  readonly socketPath: string;
  /** Calls run at once; more wait their turn (default 16). */
  readonly maxConcurrent?: number;
  /** Connections open at once; more are closed at once, before reading (default 256). */
  readonly maxConnections?: number;
  /** A call not finished by then is answered with code 11 (it may still complete; default 110 s). */
  readonly deadlineMs?: number;
  /** A connection that has not sent its whole request by then is closed (default 5 s). */
  readonly readTimeoutMs?: number;
  readonly log: (msg: string) => void;
  /** Told how each request ended (the installer counts them on its /metrics). */
  readonly observe?: (result: AgentCallResult) => void;
  /** Warm sets (DESIGN §11); absent: every call runs the synchronous path. */
  readonly warm?: WarmOptions;
}

/**
 * answered: the call ran and its answer was sent; deadline: code 11 after the deadline; dropped: its client had gone;
 * refused: not run, the client is in another pid namespace (pid-namespace.ts) and runs the call itself.
 */
export type AgentCallResult = 'answered' | 'deadline' | 'dropped' | 'refused';

export interface RunningAgent {
  readonly socketPath: string;
  /** The warm sets' figures (undefined: warm sets are off). */
  warmStats(): WarmStats | undefined;
  /** How sticky ADDs learned their pod: from the node's pod watch at once, after waiting for it, or by a read. */
  podStats(): NodePodsStats | undefined;
  close(): Promise<void>;
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  await prepareSocketPath(options.socketPath);
  // Loaded here, not with this module: the store's modules read the environment when they load (timings.ts), and
  // serveNodeAgent() turns the per-process timing report off first.
  const { longLivedHost } = await import('../store/kubernetes/open.ts');
  const makeHost = await longLivedHost(options.warm);
  const made: { host?: StoreHost } = {};
  const slots = new Slots(options.maxConcurrent ?? 16);
  const attachments = new KeyedQueue();
  const gate = new PidNamespaceGate(options.log);
  const server = createServer({ allowHalfOpen: false }, (socket) => {
    const host = made.host;
    if (host === undefined) return void socket.destroy(); // never: the host is made before any connection event
    serve(socket, { slots, attachments, host, gate }, options);
  });
  server.maxConnections = options.maxConnections ?? 256;
  const bound = await listenAt(server, options.socketPath);
  // Only once the socket is ours (an agent that still serves it keeps its journal to itself), and before the first
  // connection is handled: the warm sets' journal is replayed here.
  const held = makeHost();
  made.host = held;
  // A plugin that runs a DEL while no agent serves finds the journal through it (settle-del.ts).
  if (options.warm !== undefined) writeJournalPointer(options.socketPath, options.warm.dir);
  options.log(`listening on ${options.socketPath}`);
  return {
    socketPath: options.socketPath,
    warmStats: () => held.warm?.stats(),
    podStats: () => held.pods?.stats(),
    close: async () => {
      // The socket goes last: the calls answered from warm sets have their grouped writes made and the warm addresses
      // go back first, while calls go on being served (on the synchronous path). A new agent of the node (a rolling
      // update) binds the socket only once this one's journal lock is free, so it takes the lock and replays at once.
      await held.warm?.close();
      // While still listening: the path is ours until we remove it (socket-file.ts).
      removeOwnSocket(bound);
      await new Promise<void>((resolve) => server.close(() => resolve()));
      held.pods?.close();
    },
  };
}

function serve(
  socket: Socket,
  agent: {
    readonly slots: Slots;
    readonly attachments: KeyedQueue;
    readonly host: StoreHost;
    readonly gate: PidNamespaceGate;
  },
  options: AgentOptions,
): void {
  const reader = new FrameReader(MAX_REQUEST_BYTES);
  let received = false;
  let clientGone = false;
  const readTimer = setTimeout(() => socket.destroy(), options.readTimeoutMs ?? 5_000);
  socket.on('error', () => undefined); // a client that went away: nothing to answer
  socket.on('end', () => {
    clientGone = true;
  });
  socket.on('close', () => {
    clientGone = true;
    clearTimeout(readTimer);
  });
  socket.on('data', (chunk: Buffer) => {
    if (received) return socket.destroy(); // one request per connection
    let request: AgentRequest;
    try {
      const body = reader.push(chunk);
      if (body === undefined) return;
      request = decodeRequestFrame(body);
    } catch (err) {
      options.log(`refused a request: ${(err as Error).message}`);
      return socket.destroy();
    }
    received = true;
    clearTimeout(readTimer);
    const refused = agent.gate.refusal(request);
    if (refused !== undefined) {
      options.observe?.('refused');
      socket.end(encodeAnswer({ refused }));
      return;
    }
    // A client that gave up (closed, or past its deadline: the agent was stopped, or the call waited for a slot)
    // before the call started gets nothing run on its behalf: it already reported the call as failed.
    const call = (): Promise<void> =>
      agent.slots.run(async () => {
        if (clientGone || Date.now() >= request.giveUpAt) {
          socket.destroy();
          options.observe?.('dropped');
          options.log('dropped a request: its client went away before it started');
          return;
        }
        const deadlineMs = options.deadlineMs ?? 110_000;
        const work = execute(request, agent.host);
        const answer = await withDeadline(work, deadlineMs);
        options.observe?.(answer === undefined ? 'deadline' : 'answered');
        if (!socket.destroyed) socket.end(encodeAnswer(answer ?? unanswered(request, deadlineMs)));
        await work; // a call past its deadline still ends before the next call of its attachment starts
      });
    // Calls of one attachment run one at a time, in the order they came: a runtime that gave up on an ADD (its plugin
    // killed, or timed out) calls DEL while the ADD may still run here, and that DEL must see what the ADD wrote.
    const attachment = attachmentOf(request);
    void (attachment === undefined ? call() : agent.attachments.run(attachment, call));
  });
}

/** The CNI attachment a call is for (container id and interface), or undefined for a call of none (GC, STATUS). */
function attachmentOf(request: AgentRequest): string | undefined {
  const containerId = request.env['CNI_CONTAINERID'];
  if (containerId === undefined || containerId === '') return undefined;
  return `${containerId}\u0000${request.env['CNI_IFNAME'] ?? ''}`;
}

async function execute(request: AgentRequest, host: StoreHost): Promise<AgentAnswer> {
  const started = monotonicMs();
  const cpu = process.cpuUsage();
  let stdout = '';
  let stderr = '';
  let code: number;
  try {
    code = await runPlugin(
      {
        env: request.env,
        stdin: request.stdin,
        stdout: (text) => void (stdout += text),
        stderr: (text) => void (stderr += text),
      },
      host,
    );
  } catch (err) {
    // runPlugin answers every error itself; this is a failure while closing the store, after the answer was made.
    stderr += `hereabouts agent: ${err instanceof Error ? err.message : String(err)}\n`;
    code = stdout === '' ? writeError(err, undefined, { write: (text) => void (stdout += text) }) : 1;
  }
  const used = process.cpuUsage(cpu);
  return { code, stdout, stderr, wallMs: monotonicMs() - started, cpuMs: (used.user + used.system) / 1000 };
}

/** The answer, or undefined once `ms` have passed (the call itself cannot be stopped and may still complete). */
function withDeadline(work: Promise<AgentAnswer>, ms: number): Promise<AgentAnswer | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Code 11 for a call past the agent's deadline. */
function unanswered(request: AgentRequest, ms: number): AgentAnswer {
  return { code: 1, stdout: unansweredJson(request.stdin, `the call did not finish within ${ms} ms`), stderr: '' };
}

/** At most `limit` calls at once, first come first served. */
class Slots {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  async run(task: () => Promise<void>): Promise<void> {
    if (this.#running >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#running++;
    try {
      await task();
    } finally {
      this.#running--;
      this.#waiting.shift()?.();
    }
  }
}
