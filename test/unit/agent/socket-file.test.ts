// The agent's socket path: a busy agent (its listen backlog full) is alive, not stale, and an agent that stops
// removes the socket only if the path is still its own.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, rmSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareSocketPath } from '../../../src/agent/socket-file.ts';
import { startAgent } from '../../../src/agent/server.ts';
import { embeddedNode } from '../../support/paths.ts';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hab-sock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Connects; resolves with the socket, or with the error code when the connect fails. */
function attempt(path: string): Promise<Socket | string> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => resolve(socket));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

test('prepareSocketPath() takes an agent whose listen backlog is full for a live one and leaves its socket', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.sock');
  // A busy agent: listening with a backlog of 1, its event loop blocked so that it accepts nothing.
  const busy = spawn(
    embeddedNode,
    [
      '-e',
      `const server = require('node:net').createServer();
       server.listen({ path: ${JSON.stringify(path)}, backlog: 1 }, () => {
         process.stdout.write('listening\\n');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const open: Socket[] = [];
  t.after(() => {
    open.forEach((s) => s.destroy());
    busy.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    busy.stdout.once('data', () => resolve());
    busy.once('exit', (code) => reject(new Error(`the busy agent exited (${code})`)));
  });
  // Fill its backlog: connects succeed while there is room, then the kernel answers EAGAIN.
  let refusal: string | undefined;
  for (let i = 0; i < 1000 && refusal === undefined; i++) {
    const result = await attempt(path);
    if (typeof result === 'string') refusal = result;
    else open.push(result);
  }
  assert.equal(refusal, 'EAGAIN', 'the backlog filled up');
  const before = lstatSync(path);
  await assert.rejects(prepareSocketPath(path), /served by another agent/);
  const after = lstatSync(path);
  assert.ok(after.isSocket(), 'the busy agent keeps its socket');
  assert.equal(after.ino, before.ino);
});

test('prepareSocketPath() removes a socket nobody listens on (its agent was killed)', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.sock');
  const killed = spawnSync(embeddedNode, [
    '-e',
    `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`,
  ]);
  assert.equal(killed.signal, 'SIGKILL');
  assert.ok(lstatSync(path).isSocket(), 'a killed agent leaves its socket file behind');
  await prepareSocketPath(path);
  assert.equal(lstatsExists(path), false);
});

function lstatsExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

test('an agent that stops leaves the socket of an agent that bound the path after it', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.sock');
  const first = await startAgent({ socketPath: path, log: () => undefined });
  // Another agent has the path now (the first one's file was removed under it).
  unlinkSync(path);
  const second: Server = createServer((socket) => socket.end('second\n'));
  await new Promise<void>((resolve) => second.listen(path, resolve));
  t.after(() => second.close());
  const secondInode = lstatSync(path).ino;
  await first.close();
  assert.ok(lstatsExists(path), "the first agent's close() removed the second agent's socket");
  assert.equal(lstatSync(path).ino, secondInode);
  const reply = await new Promise<string>((resolve, reject) => {
    let text = '';
    const socket = connect(path);
    socket.on('data', (b: Buffer) => (text += b.toString()));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  assert.equal(reply, 'second\n');
});

test('an agent that stops removes its own socket', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'agent.sock');
  const agent = await startAgent({ socketPath: path, log: () => undefined });
  assert.ok(lstatSync(path).isSocket());
  await agent.close();
  assert.equal(lstatsExists(path), false);
});
