// The per-key decision of docs/security.md ("An inline key the policy does not allow: ignored or refused"): each row
// of its table is played here against the parser, and every key the parser holds to the policy has a row. Ignored
// means the call goes on without the value (and says why); refused means code 7 naming the key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNetworkConfig, type ParseOptions } from '../../../src/config/parse.ts';
import { FLAT_FILE_PATHS } from '../../../src/config/flatfile.ts';
import { POLICY_KEYS } from '../../../src/config/trust.ts';
import type { NetworkConfig } from '../../../src/config/types.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';
import { repoRoot } from '../../support/paths.ts';

const WHEREABOUTS_KUBECONFIG = '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig';

/** No flat file, no HEREABOUTS_ALLOWED_DIRS: the default policy, whatever the test runner's environment holds. */
const bare: ParseOptions = { cniVersion: '1.0.0', readFile: () => undefined, env: {} };

function withFlatFile(keys: Record<string, unknown>): ParseOptions {
  return { ...bare, readFile: (path) => (path === FLAT_FILE_PATHS[0] ? JSON.stringify(keys) : undefined) };
}

function parse(ipam: Record<string, unknown>, options: ParseOptions = bare): NetworkConfig {
  return parseNetworkConfig(
    {
      cniVersion: '1.0.0',
      name: 'net',
      type: 'macvlan',
      ipam: { type: 'whereabouts', range: '10.0.0.0/24', datastore: 'local', ...ipam },
    },
    options,
  );
}

function refused(ipam: Record<string, unknown>, key: RegExp, options: ParseOptions = bare): void {
  assert.throws(
    () => parse(ipam, options),
    (err: unknown) => {
      assert.ok(err instanceof HereaboutsError, String(err));
      assert.equal(cniCodeOf(err), 7);
      assert.match(err.message, key);
      return true;
    },
    JSON.stringify(ipam),
  );
}

function ignoredLogFile(ipam: Record<string, unknown>, options: ParseOptions = bare): NetworkConfig {
  const config = parse(ipam, options);
  assert.equal(config.ipam.ranges.length, 1, 'the addresses are the same as without the key');
  assert.equal(config.ignored?.length, 1, 'said once');
  assert.match(config.ignored[0]!, /^ignoring the network configuration's log_file: ipam\.log_file /);
  return config;
}

/** A host path outside every default allowed directory. */
const outside = '/tmp/whereabouts';

/** How each row of the docs table is played: its decision must be the table's. */
const plays: Record<string, { decision: 'ignored' | 'refused'; play: () => void }> = {
  log_file: {
    decision: 'ignored',
    play: () => {
      const config = ignoredLogFile({ log_file: `${outside}.log` });
      assert.equal(config.ipam.logFile, undefined, 'stderr: no flat file names one');
      assert.match(config.ignored![0]!, /"\/tmp\/whereabouts\.log" is outside the directories .* \(\/var\/log\)/);
      assert.match(config.ignored![0]!, /logging to stderr instead \(to follow it: set allowed_log_dirs /);
    },
  },
  configuration_path: {
    decision: 'refused',
    play: () =>
      refused({ configuration_path: `${outside}.conf` }, /^ipam\.configuration_path "\/tmp\/whereabouts\.conf"/),
  },
  'kubernetes.kubeconfig': {
    decision: 'refused',
    play: () =>
      refused(
        { datastore: 'kubernetes', kubernetes: { kubeconfig: `${outside}.kubeconfig` } },
        /^ipam\.kubernetes\.kubeconfig "\/tmp\/whereabouts\.kubeconfig" is outside/,
      ),
  },
  data_dir: {
    decision: 'refused',
    play: () => refused({ data_dir: `${outside}/data` }, /^ipam\.data_dir "\/tmp\/whereabouts\/data"/),
  },
  cache_dir: {
    decision: 'refused',
    play: () =>
      refused(
        { datastore: 'kubernetes', kubernetes: { kubeconfig: WHEREABOUTS_KUBECONFIG }, cache_dir: `${outside}/cache` },
        /^ipam\.cache_dir "\/tmp\/whereabouts\/cache"/,
      ),
  },
  'an exec credential plugin or auth provider in an inline `kubernetes.kubeconfig`': {
    decision: 'refused',
    // The parser's part: a kubeconfig named inline may not run one (src/kube refuses it, code 7 naming the user:
    // test/security/tenant.test.ts); one the flat file names may.
    play: () => {
      const inline = parse({ datastore: 'kubernetes', kubernetes: { kubeconfig: WHEREABOUTS_KUBECONFIG } }).ipam
        .datastore;
      assert.equal(inline.kind === 'kubernetes' && inline.execCredentials, false);
      const flat = withFlatFile({ kubernetes: { kubeconfig: WHEREABOUTS_KUBECONFIG } });
      const operator = parse({ datastore: 'kubernetes' }, flat).ipam.datastore;
      assert.equal(operator.kind === 'kubernetes' && operator.execCredentials, true);
    },
  },
  ...Object.fromEntries(
    Object.values(POLICY_KEYS).map((key) => [
      key,
      {
        decision: 'refused' as const,
        play: () =>
          refused(
            { [key]: key === POLICY_KEYS.execCredentials ? true : ['/'] },
            new RegExp(`^ipam\\.${key} may only be set in the node's flat file`),
          ),
      },
    ]),
  ),
};

/** The table's rows: each key of its first cell (or the cell itself when it names none first) and the decision. */
function documented(): Map<string, 'ignored' | 'refused'> {
  const doc = readFileSync(join(repoRoot, 'docs', 'security.md'), 'utf8');
  const section = doc.split('## An inline key the policy does not allow: ignored or refused')[1]?.split('\n## ')[0];
  assert.ok(section !== undefined, 'docs/security.md has the section');
  const rows = new Map<string, 'ignored' | 'refused'>();
  for (const line of section.split('\n')) {
    const cells = line.split(' | ');
    if (!line.startsWith('| ') || cells.length < 3 || line.startsWith('| inline key')) continue;
    const first = cells[0]!.slice(2);
    const decision = /^\*\*(ignored|refused)\*\*/.exec(cells[1]!)?.[1];
    assert.ok(decision === 'ignored' || decision === 'refused', `a decision for ${first}`);
    const keys = first.startsWith('`') ? [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) : [first];
    for (const key of keys) rows.set(key, decision);
  }
  return rows;
}

test('docs/security.md decides every inline key the policy holds, and each decision is what the parser does', () => {
  const rows = documented();
  assert.deepEqual([...rows.keys()].sort(), Object.keys(plays).sort());
  for (const [key, decision] of rows) {
    assert.equal(plays[key]!.decision, decision, key);
    plays[key]!.play();
  }
});

test("an ignored inline log_file falls back to the flat file's log_file, the operator's", () => {
  const options = withFlatFile({ log_file: '/var/log/hereabouts.log', datastore: 'local' });
  const config = ignoredLogFile({ log_file: '/tmp/whereabouts.log' }, options);
  assert.equal(config.ipam.logFile, '/var/log/hereabouts.log');
  assert.match(config.ignored![0]!, /logging to \/var\/log\/hereabouts\.log \(the flat file's log_file\) instead/);
});

test('an inline log_file inside the allowed directories is followed and nothing is said', () => {
  const config = parse({ log_file: '/var/log/whereabouts.log' });
  assert.equal(config.ipam.logFile, '/var/log/whereabouts.log');
  assert.equal(config.ignored, undefined);
});

test('an inline log_file that is relative, not normalised, has a control character or passes a link is ignored; the other path keys are refused', () => {
  const allowed = mkdtempSync(join(tmpdir(), 'hab-inline-trust-'));
  mkdirSync(join(allowed, 'real'));
  symlinkSync('/tmp', join(allowed, 'link'));
  const options: ParseOptions = { ...bare, env: { HEREABOUTS_ALLOWED_DIRS: allowed } };
  const bad = [
    'whereabouts.log',
    `${allowed}/../x.log`,
    `${allowed}//x.log`,
    `${allowed}/x\n.log`,
    `${allowed}/link/x.log`,
  ];
  for (const path of bad) {
    assert.equal(ignoredLogFile({ log_file: path }, options).ipam.logFile, undefined, path);
    refused({ data_dir: path }, /^ipam\.data_dir /, options);
    refused({ configuration_path: path }, /^ipam\.configuration_path /, options);
    refused({ datastore: 'kubernetes', kubernetes: { kubeconfig: path } }, /^ipam\.kubernetes\.kubeconfig /, options);
    const k8s = { datastore: 'kubernetes', kubernetes: { kubeconfig: WHEREABOUTS_KUBECONFIG } };
    refused({ ...k8s, cache_dir: path }, /^ipam\.cache_dir /, options);
  }
  assert.equal(parse({ log_file: `${allowed}/real/x.log` }, options).ipam.logFile, `${allowed}/real/x.log`);
});

test('a log_file of the wrong type is still code 7, inline or in the flat file, and so is a bad one in the flat file', () => {
  refused({ log_file: 5 }, /^ipam\.log_file must be a string, got 5/);
  refused(
    { log_file: '/tmp/whereabouts.log' },
    /^ipam\.log_file "x\.log" must be an absolute path/,
    withFlatFile({ log_file: 'x.log' }),
  );
  refused(
    {},
    /^ipam\.log_file "x\.log" must be an absolute path/,
    withFlatFile({ log_file: 'x.log', datastore: 'local' }),
  );
});

test('a Whereabouts NAD as its docs write it parses: log_file ignored, its kubeconfig followed, the same ranges', () => {
  const config = parse({
    type: 'whereabouts',
    datastore: undefined, // Whereabouts' only store: the kubernetes one
    range: '192.168.2.225/28',
    exclude: ['192.168.2.229/30', '192.168.2.236/32'],
    log_file: '/tmp/whereabouts.log',
    log_level: 'debug',
    kubernetes: { kubeconfig: WHEREABOUTS_KUBECONFIG },
  });
  assert.equal(config.ipam.datastore.kind === 'kubernetes' && config.ipam.datastore.kubeconfig, WHEREABOUTS_KUBECONFIG);
  assert.equal(config.ipam.logLevel, 'debug');
  assert.equal(config.ipam.logFile, undefined);
  assert.equal(config.ignored?.length, 1);
});
