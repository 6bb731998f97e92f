// The plugin's side of the node agent: forward this CNI call (its CNI_* environment and stdin) over the agent's unix
// socket and print the agent's answer, so that the process loads neither TLS nor the plugin (docs/architecture.md).
// Before the request is sent, any failure to reach the agent means "run in-process" (the caller's fallback); once
// it is sent the agent may be executing it, so a lost or late answer is CNI code 11, never a second execution. The
// one exception is an agent that answers that it did not run the call (it runs in another pid namespace than this
// process, so it could not judge this node's lock holders by their pids): then the call runs here.
import { connect, type Socket } from 'node:net';
import { writeFd } from '../fs/fd-write.ts';
import { ownPidNamespace } from '../fs/proc.ts';
import { readStdinFd } from '../cni/stdin-fd.ts';
import {
  decodeAnswerFrame,
  encodeRequest,
  forwardedEnv,
  FrameReader,
  MAX_ANSWER_BYTES,
  type AgentAnswer,
  type AgentRefusal,
} from './frame.ts';
import { unansweredJson } from './unanswered.ts';

/** How long the client waits for the answer unless HEREABOUTS_AGENT_TIMEOUT_MS says otherwise. */
export const DEFAULT_ANSWER_TIMEOUT_MS = 120_000;
const CONNECT_TIMEOUT_MS = 1_000;

/** Not sent: the caller runs the plugin in-process with this stdin (a thunk that rethrows a read failure). */
export interface Fallback {
  readonly fallback: true;
  readonly stdin: () => Buffer;
}

/** Forwards the call; returns the exit code, or a Fallback when the agent could not be reached. */
export async function callAgent(socketPath: string, env: NodeJS.ProcessEnv): Promise<number | Fallback> {
  const started = { wallMs: sinceStartMs(), cpuMs: cpuMs() };
  let stdin: Buffer;
  try {
    stdin = readStdinFd();
  } catch (err) {
    return {
      fallback: true,
      stdin: () => {
        throw err;
      },
    };
  }
  const socket = await connected(socketPath);
  if (socket === undefined) return { fallback: true, stdin: () => stdin }; // nothing was sent
  const linked = { wallMs: sinceStartMs(), cpuMs: cpuMs() };
  const timeoutMs = answerTimeout(env['HEREABOUTS_AGENT_TIMEOUT_MS']);
  const pidns = ownPidNamespace();
  const answer = await exchange(
    socket,
    encodeRequest({
      env: forwardedEnv(env),
      stdin,
      giveUpAt: Date.now() + timeoutMs,
      ...(pidns === undefined ? {} : { pidns }),
    }),
    timeoutMs,
  );
  if (typeof answer === 'string') {
    writeFd(1, unansweredJson(stdin, answer));
    return 1;
  }
  if ('refused' in answer) {
    writeFd(2, `hereabouts: the node agent did not run this call (${answer.refused}); running it in this process\n`);
    return { fallback: true, stdin: () => stdin };
  }
  if (answer.stderr !== '') writeFd(2, answer.stderr);
  if (answer.stdout !== '') writeFd(1, answer.stdout);
  if (env['HEREABOUTS_TIMINGS'] === '1') printTimings(started, linked, answer);
  return answer.code;
}

/** A connected socket, or undefined when it cannot be had (ENOENT, ECONNREFUSED, EACCES, a full backlog...). */
function connected(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
}

/** Sends the request and reads one answer; a string says why there is none. */
function exchange(socket: Socket, request: Buffer, timeoutMs: number): Promise<AgentAnswer | AgentRefusal | string> {
  return new Promise((resolve) => {
    const reader = new FrameReader(MAX_ANSWER_BYTES);
    let done = false;
    const finish = (result: AgentAnswer | AgentRefusal | string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      try {
        const body = reader.push(chunk);
        if (body !== undefined) finish(decodeAnswerFrame(body));
      } catch (err) {
        finish(`a malformed answer (${(err as Error).message})`);
      }
    });
    socket.on('error', (err) => finish(`the connection failed (${err.message})`));
    socket.on('close', () => finish('the connection closed without an answer'));
    socket.write(request);
  });
}

function answerTimeout(value: string | undefined): number {
  const ms = Number(value);
  return value !== undefined && Number.isInteger(ms) && ms > 0 ? ms : DEFAULT_ANSWER_TIMEOUT_MS;
}

/** HEREABOUTS_TIMINGS=1: the same line as the in-process plugin prints, with the agent's share as its own step. */
function printTimings(
  started: { wallMs: number; cpuMs: number },
  connected: { wallMs: number; cpuMs: number },
  answer: AgentAnswer,
): void {
  const now = { wallMs: sinceStartMs(), cpuMs: cpuMs() };
  const agentWall = answer.wallMs ?? 0;
  const round = (ms: number): number => Math.round(ms * 10) / 10;
  const parts = [
    { label: 'process start, stdin', wallMs: round(started.wallMs), cpuMs: round(started.cpuMs) },
    {
      label: 'connect to the node agent',
      wallMs: round(connected.wallMs - started.wallMs),
      cpuMs: round(connected.cpuMs - started.cpuMs),
    },
    {
      label: "in the node agent (the agent's wall and CPU)",
      wallMs: round(agentWall),
      cpuMs: round(answer.cpuMs ?? 0),
    },
    {
      label: 'round trip, waiting (this process)',
      wallMs: round(now.wallMs - connected.wallMs - agentWall),
      cpuMs: round(now.cpuMs - connected.cpuMs),
    },
  ];
  writeFd(2, `hereabouts-timings ${JSON.stringify(parts)}\n`);
}

function cpuMs(): number {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1000;
}

/** Wall time since the process started; process.uptime() loads nothing (the global `performance` loads perf_hooks). */
function sinceStartMs(): number {
  return process.uptime() * 1000;
}
