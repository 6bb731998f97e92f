// The node agent's journal of warm hand-outs (src/store/kubernetes/warm/journal.ts): what replay answers after a clean close, a torn
// append, a SIGKILL in the middle of appending, an append a full disk or a file size limit cut short, a compaction,
// and what it refuses (a damaged line, a planted link).
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import {
  JOURNAL_FILE,
  Journal,
  type HandOut,
  type JournalEntry,
} from '../../../../../src/store/kubernetes/warm/journal.ts';
import { ErrorKind, isKind } from '../../../../../src/errors.ts';
import { repoRoot } from '../../../../support/paths.ts';

function dirFor(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-journal-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const handOut = (address: string, pod = `p-${address}`): HandOut => ({
  op: 'handed-out',
  pool: 'kube-system/10.1.0.0-24',
  address,
  attachment: { containerId: `c-${pod}`, ifname: 'net1', podRef: `default/${pod}`, podUid: `uid-${pod}` },
  at: '2026-11-27T23:00:00.000Z',
});
const settled = (address: string): JournalEntry => ({ op: 'settled', pool: 'kube-system/10.1.0.0-24', address });
const released = (address: string, pod = `p-${address}`): JournalEntry => ({
  ...handOut(address, pod),
  op: 'released',
});
const pendingAddresses = (journal: Journal): string[] => journal.pending().map((h) => h.address);

test('replay answers the latest unsettled entry of each address, in journal order, with its attachment', (t) => {
  const dir = dirFor(t);
  const journal = Journal.open(dir);
  journal.append([handOut('10.1.0.9'), handOut('10.1.0.8')]);
  journal.append([settled('10.1.0.9'), handOut('10.1.0.7')]);
  journal.append([settled('10.1.0.7')]);
  // Settled, then handed out again to another pod: pending, for that pod.
  journal.append([handOut('10.1.0.7', 'second')]);
  // Handed out, then released before its rename: the release is what is pending.
  journal.append([handOut('10.1.0.6'), released('10.1.0.6')]);
  journal.close();
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  assert.deepEqual(pendingAddresses(replayed), ['10.1.0.8', '10.1.0.7', '10.1.0.6']);
  assert.equal(replayed.pending()[1]?.attachment.podRef, 'default/second');
  assert.deepEqual(replayed.pending()[0], handOut('10.1.0.8'));
  assert.deepEqual(replayed.pending()[2], released('10.1.0.6'));
  assert.equal(replayed.lines, 8);
});

test('a torn last line (an append a crash cut short, never acknowledged) is dropped and cut off the file', (t) => {
  const dir = dirFor(t);
  const first = Journal.open(dir);
  first.append([handOut('10.1.0.9')]);
  first.close();
  const file = join(dir, JOURNAL_FILE);
  const intact = readFileSync(file, 'utf8');
  appendFileSync(file, intact.slice(0, 30)); // half of another hand-out, no newline
  const replayed = Journal.open(dir);
  assert.deepEqual(pendingAddresses(replayed), ['10.1.0.9']);
  assert.equal(readFileSync(file, 'utf8'), intact, 'the torn tail is truncated, so the next append starts a line');
  replayed.append([handOut('10.1.0.8')]);
  replayed.close();
  const again = Journal.open(dir);
  t.after(() => again.close());
  assert.deepEqual(pendingAddresses(again), ['10.1.0.9', '10.1.0.8']);
});

test('a complete line that is damaged is refused as corrupt, naming the line: replay does not guess', (t) => {
  const dir = dirFor(t);
  const journal = Journal.open(dir);
  journal.append([handOut('10.1.0.9'), handOut('10.1.0.8')]);
  journal.close();
  const file = join(dir, JOURNAL_FILE);
  const text = readFileSync(file, 'utf8');
  const cases = [
    ['checksum mismatch', text.replace('10.1.0.8', '10.1.0.6')],
    ['not a journal entry', `${text}${lineWithChecksum('{"op":"handed-out","pool":"p"}')}`],
    ['not JSON', `${text}${lineWithChecksum('{"op":')}`],
  ] as const;
  for (const [why, content] of cases) {
    writeFileSync(file, content);
    assert.throws(
      () => Journal.open(dir),
      (err: unknown) => isKind(err, ErrorKind.Corrupt) && err.message.includes(why) && /line \d/.test(err.message),
      why,
    );
  }
});

/** A line as the journal writes it, around any text: only the shape is wrong. */
function lineWithChecksum(json: string): string {
  return `${(crc32Of(json) >>> 0).toString(16).padStart(8, '0')} ${json}\n`;
}
function crc32Of(text: string): number {
  let crc = ~0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc;
}

test('compact() keeps only the pending hand-outs, and a stray temp file of a compaction cut short is harmless', (t) => {
  const dir = dirFor(t);
  const journal = Journal.open(dir);
  for (let i = 1; i <= 50; i++) journal.append([handOut(`10.1.0.${i}`)]);
  for (let i = 1; i <= 48; i++) journal.append([settled(`10.1.0.${i}`)]);
  assert.equal(journal.lines, 98);
  journal.compact();
  assert.equal(journal.lines, 2);
  journal.append([handOut('10.1.0.51')]);
  journal.close();
  writeFileSync(join(dir, `.${JOURNAL_FILE}.tmp-123-abc`), 'half a compaction');
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  assert.deepEqual(pendingAddresses(replayed), ['10.1.0.49', '10.1.0.50', '10.1.0.51']);
  assert.equal(readFileSync(join(dir, JOURNAL_FILE), 'utf8').split('\n').length - 1, 3);
});

test('a link planted at the journal path is not followed', (t) => {
  const dir = dirFor(t);
  const target = join(dir, 'elsewhere');
  writeFileSync(target, '');
  symlinkSync(target, join(dir, JOURNAL_FILE));
  assert.throws(
    () => Journal.open(dir),
    (err: unknown) => isKind(err, ErrorKind.Io) && err.message.includes(JOURNAL_FILE),
  );
  assert.equal(readFileSync(target, 'utf8'), '');
});

test('SIGKILL while appending: every acknowledged hand-out is replayed, and nothing else', async (t) => {
  const dir = dirFor(t);
  // A writer that acknowledges each append on stdout once append() returned, as the agent answers an ADD.
  const script = [
    `import { Journal } from ${JSON.stringify(join(repoRoot, 'src/store/kubernetes/warm/journal.ts'))};`,
    `const journal = Journal.open(${JSON.stringify(dir)});`,
    'for (let i = 0; ; i++) {',
    "  const entry = { op: 'handed-out', pool: 'p', address: String(i), at: 'now',",
    "    attachment: { containerId: 'c' + i, ifname: 'net1', podRef: 'default/p' + i } };",
    '  journal.append([entry]);',
    "  process.stdout.write(i + '\\n');",
    '}',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.split('\n').length > 200) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`the writer exited by itself: ${err}`)));
  });
  await new Promise((resolve) => child.on('close', resolve));
  const acknowledged = out.split('\n').filter((line) => line !== '');
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  const pending = pendingAddresses(replayed);
  // Each acknowledged one is there; at most the one in flight at the kill besides, and only right after them.
  assert.deepEqual(pending.slice(0, acknowledged.length), acknowledged);
  assert.ok(
    pending.length <= acknowledged.length + 1,
    `${pending.length} replayed, ${acknowledged.length} acknowledged`,
  );
});

test('an append a full disk cuts short leaves no fragment: the next append and the replay see only acknowledged entries', (t) => {
  if (process.getuid?.() !== 0) return t.skip('needs root to mount a tmpfs');
  const dir = mkdtempSync(join(tmpdir(), 'hereabouts-journal-enospc-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k,mode=0700', 'tmpfs', dir]);
  let open: Journal | undefined;
  t.after(() => {
    try {
      open?.close();
    } finally {
      spawnSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const journal = Journal.open(dir);
  open = journal;
  journal.append([handOut('10.1.0.9')]); // the file's first page, most of it still free
  // The rest of the file system, so that a long line fills the journal's page, then finds no other.
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (;;) writeSync(fd, Buffer.alloc(4096, 1));
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
  const file = join(dir, JOURNAL_FILE);
  const before = readFileSync(file, 'utf8');
  assert.throws(
    () => journal.append([handOut('10.1.0.8', 'x'.repeat(8000))]),
    (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOSPC' || /ENOSPC/.test(String(err)),
  );
  assert.equal(readFileSync(file, 'utf8'), before, 'the part of the refused line that was written is cut back off');
  unlinkSync(filler);
  journal.append([handOut('10.1.0.7')]);
  assert.deepEqual(pendingAddresses(journal), ['10.1.0.9', '10.1.0.7']);
  journal.close();
  open = undefined;
  const replayed = Journal.open(dir);
  open = replayed;
  assert.deepEqual(replayed.pending(), [handOut('10.1.0.9'), handOut('10.1.0.7')]);
  assert.equal(replayed.lines, 2);
});

test('an append a file size limit cuts short is cut back off the file, byte for byte, and appends go on after it', (t) => {
  const dir = dirFor(t);
  // A writer under a file size limit of 2 or 4 KiB (ulimit -f counts blocks of 512 or 1024 bytes): a long line is
  // written in part, then refused (EFBIG; Node ignores SIGXFSZ).
  const entries = [handOut('10.1.0.9'), handOut('10.1.0.8', 'x'.repeat(10000)), handOut('10.1.0.7')];
  const script = [
    "import { readFileSync } from 'node:fs';",
    `import { Journal } from ${JSON.stringify(join(repoRoot, 'src/store/kubernetes/warm/journal.ts'))};`,
    `const file = ${JSON.stringify(join(dir, JOURNAL_FILE))};`,
    `const [first, long, next] = ${JSON.stringify(entries)};`,
    `const journal = Journal.open(${JSON.stringify(dir)});`,
    'const append = (entry) => { try { journal.append([entry]); } catch (err) { return err.code ?? String(err); } };',
    'append(first);',
    "const before = readFileSync(file, 'utf8');",
    'const error = append(long);',
    "const after = readFileSync(file, 'utf8');",
    'const later = append(next);',
    'journal.close();',
    'process.stdout.write(JSON.stringify({ before, after, error, later }));',
  ].join('\n');
  const out = execFileSync(
    'sh',
    ['-c', 'ulimit -f 4 && exec "$0" "$@"', process.execPath, '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  );
  const result = JSON.parse(out) as { before: string; after: string; error?: string; later?: string };
  assert.equal(result.error, 'EFBIG');
  assert.equal(result.after, result.before, 'the part of the refused line that was written is cut back off');
  assert.equal(result.later, undefined, 'the next append fits');
  const replayed = Journal.open(dir);
  t.after(() => replayed.close());
  assert.deepEqual(replayed.pending(), [handOut('10.1.0.9'), handOut('10.1.0.7')]);
});
