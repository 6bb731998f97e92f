// The IPAM key `sticky` (docs/sticky.md): true, false or "annotated"; anything else is a configuration error. It
// needs the Kubernetes store: without it the key is accepted with a warning (the controller parses NADs as local
// configurations), and it has no effect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNetworkConfig, type ParseOptions } from '../../../src/config/parse.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const noFlatFile: ParseOptions = { cniVersion: '1.0.0', readFile: () => undefined };
const KUBECONFIG = '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig';

function parse(ipam: Record<string, unknown>, options: Partial<ParseOptions> = {}) {
  return parseNetworkConfig(
    {
      cniVersion: '1.0.0',
      name: 'net',
      type: 'macvlan',
      ipam: {
        type: 'hereabouts',
        range: '10.0.0.0/24',
        datastore: 'kubernetes',
        kubernetes: { kubeconfig: KUBECONFIG },
        ...ipam,
      },
    },
    { ...noFlatFile, ...options },
  );
}

function rejects(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HereaboutsError, String(err));
    assert.equal(cniCodeOf(err), 7);
    assert.match(err.message, pattern);
    return true;
  });
}

const stickyWarnings = (warnings: readonly string[]) => warnings.filter((w) => w.includes('sticky'));

test('sticky: true binds every StatefulSet replica and VM ("all")', () => {
  const config = parse({ sticky: true });
  assert.equal(config.ipam.sticky, 'all');
  assert.deepEqual(stickyWarnings(config.warnings), []);
});

test('sticky: "annotated" binds only the pods that ask', () => {
  const config = parse({ sticky: 'annotated' });
  assert.equal(config.ipam.sticky, 'annotated');
  assert.deepEqual(stickyWarnings(config.warnings), []);
});

test('sticky: false, null or absent is not sticky, and leaves no key in the configuration', () => {
  for (const ipam of [{ sticky: false }, { sticky: null }, {}]) {
    const config = parse(ipam);
    assert.equal(config.ipam.sticky, undefined, JSON.stringify(ipam));
    assert.equal('sticky' in config.ipam, false, JSON.stringify(ipam));
    assert.deepEqual(stickyWarnings(config.warnings), [], JSON.stringify(ipam));
  }
});

test('sticky of another string is a configuration error naming ipam.sticky and the value', () => {
  rejects(() => parse({ sticky: 'yes' }), /ipam\.sticky .*"yes"/);
  rejects(() => parse({ sticky: 'yes' }), /true, false or "annotated"/);
  for (const value of ['true', 'false', 'all', 'Annotated', '']) {
    rejects(() => parse({ sticky: value }), /^ipam\.sticky /);
  }
});

test('sticky of another type is a configuration error naming ipam.sticky and the value', () => {
  rejects(() => parse({ sticky: 1 }), /ipam\.sticky .*\b1\b/);
  rejects(() => parse({ sticky: 0 }), /ipam\.sticky .*\b0\b/);
  rejects(() => parse({ sticky: ['annotated'] }), /ipam\.sticky /);
  rejects(() => parse({ sticky: { mode: 'annotated' } }), /ipam\.sticky /);
});

test('an invalid sticky value is refused with the local datastore too', () => {
  rejects(() => parse({ datastore: 'local', kubernetes: undefined, sticky: 'yes' }), /ipam\.sticky .*"yes"/);
});

test('sticky with the local datastore is accepted with a warning that it has no effect', () => {
  for (const [value, shown] of [
    [true, 'true'],
    ['annotated', '"annotated"'],
  ] as const) {
    const config = parse({ datastore: 'local', kubernetes: undefined, sticky: value });
    assert.equal(config.ipam.datastore.kind, 'local');
    const warnings = stickyWarnings(config.warnings);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.ok(warnings[0]?.startsWith(`ipam.sticky ${shown} `), warnings[0]);
    assert.match(warnings[0] ?? '', /has no effect without "datastore": "kubernetes"/);
  }
});

test('sticky: false with the local datastore warns of nothing', () => {
  const config = parse({ datastore: 'local', kubernetes: undefined, sticky: false });
  assert.deepEqual(stickyWarnings(config.warnings), []);
});

test('sticky is read from the flat file, and an inline value wins over it', () => {
  const flatPath = '/etc/cni/net.d/hereabouts.d/hereabouts.conf';
  const readFile = (flat: string) => (p: string) => (p === flatPath ? flat : undefined);
  assert.equal(parse({}, { readFile: readFile('{"sticky":"annotated"}') }).ipam.sticky, 'annotated');
  assert.equal(parse({ sticky: true }, { readFile: readFile('{"sticky":"annotated"}') }).ipam.sticky, 'all');
  assert.equal(parse({ sticky: false }, { readFile: readFile('{"sticky":true}') }).ipam.sticky, undefined);
  rejects(() => parse({}, { readFile: readFile('{"sticky":"on"}') }), /ipam\.sticky .*"on"/);
});
