// The plugin's log file, as an operator reads it: JSON lines (time, level, mode "cni", msg, verb, container,
// ifname), and the flat file that the DaemonSet installs on every node is merged silently at info level (a debug
// note), not announced as a warning on every ADD.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();

describe('plugin log lines', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hab-loglines-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const add = async (level: string, id: string): Promise<Array<Record<string, unknown>>> => {
    const flat = join(dir, `flat-${id}.conf`);
    const logFile = join(dir, `${id}.log`);
    writeFileSync(
      flat,
      JSON.stringify({ datastore: 'local', data_dir: join(dir, `data-${id}`), log_file: logFile, log_level: level }),
    );
    const conf = {
      cniVersion: '1.0.0',
      name: 'loglines',
      type: 'bridge',
      ipam: { type: 'hereabouts', range: '10.70.0.0/24', configuration_path: flat },
    };
    const out = await runCni(
      bin,
      {
        command: 'ADD',
        containerId: `c-${id}`,
        netns: '/var/run/netns/x',
        ifname: 'eth0',
        path: '/usr/lib/cni',
        args: 'K8S_POD_NAMESPACE=n;K8S_POD_NAME=p',
      },
      conf,
    );
    assert.equal(out.code, 0, out.stdout + out.stderr);
    if (!existsSync(logFile)) return [];
    return readFileSync(logFile, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  test('at log_level info, an ADD through the flat file logs no "merged" line', async () => {
    const lines = await add('info', 'info');
    assert.deepEqual(
      lines.filter((l) => /merged/.test(String(l['msg']))),
      [],
    );
    assert.ok(
      lines.every((l) => l['level'] !== 'warning'),
      JSON.stringify(lines),
    );
  });

  test('at log_level debug, the merged flat file is a debug line in the JSON shape of every mode', async () => {
    const lines = await add('debug', 'debug');
    const merged = lines.find((l) => /flat file \S+ merged under the inline ipam keys/.test(String(l['msg'])));
    assert.ok(merged !== undefined, JSON.stringify(lines));
    assert.equal(merged['level'], 'debug');
    assert.equal(merged['mode'], 'cni');
    assert.equal(merged['verb'], 'ADD');
    assert.equal(merged['container'], 'c-debug');
    assert.equal(merged['ifname'], 'eth0');
  });
});
