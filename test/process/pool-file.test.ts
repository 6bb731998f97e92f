// A pool file that does not parse into the full schema is corrupt: ADD fails with code 5 and writes nothing. It is
// never read as an empty pool, which would hand out the addresses it holds. Runs the packaged executable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();

const damaged: ReadonlyArray<[string, string]> = [
  ['"allocations": null', '{"range":"10.70.0.0/24","allocations":null}\n'],
  ['no "allocations" key', '{"range":"10.70.0.0/24"}\n'],
  ['a null record', '{"range":"10.70.0.0/24","allocations":{"1":null}}\n'],
];

for (const [what, content] of damaged) {
  test(`ADD on a pool file with ${what} fails with code 5 and leaves the file as it was`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hab-corrupt-'));
    try {
      const dataDir = join(dir, 'data');
      const networkDir = join(dataDir, 'corrupt');
      mkdirSync(networkDir, { recursive: true });
      const file = join(networkDir, '10.70.0.0-24.json');
      writeFileSync(file, content);
      const conf = {
        cniVersion: '1.0.0',
        name: 'corrupt',
        type: 'bridge',
        ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range: '10.70.0.0/24' },
      };
      const out = await runCni(
        bin,
        { command: 'ADD', containerId: 'c1', netns: '/x', ifname: 'eth0', path: '/x' },
        conf,
      );
      assert.equal(out.json?.['code'], 5, out.stdout + out.stderr);
      assert.match(String(out.json['msg']), /corrupt/);
      assert.equal(readFileSync(file, 'utf8'), content);
      assert.deepEqual(
        readdirSync(networkDir).filter((f) => !f.endsWith('.lock')),
        ['10.70.0.0-24.json'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
