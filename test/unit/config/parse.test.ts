import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNetworkConfig, type ParseOptions } from '../../../src/config/parse.ts';
import { parseCniArgs } from '../../../src/cni/args.ts';
import { formatIP, parseIP } from '../../../src/ip/address.ts';
import { formatCidr } from '../../../src/ip/cidr.ts';
import { HereaboutsError } from '../../../src/errors.ts';
import { cniCodeOf } from '../../../src/cni/errors.ts';

const noFlatFile: ParseOptions = { cniVersion: '1.0.0', readFile: () => undefined };
const v4 = (text: string): bigint => parseIP(text).value;

function parse(
  ipam: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  options: Partial<ParseOptions> = {},
) {
  return parseNetworkConfig(
    {
      cniVersion: '1.0.0',
      name: 'net',
      type: 'bridge',
      ipam: { type: 'hereabouts', datastore: 'local', ...ipam },
      ...extra,
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

test('parseNetworkConfig() masks the range and spans network+1 to broadcast-1', () => {
  const [r] = parse({ range: '192.168.2.225/28' }).ipam.ranges;
  assert.equal(formatCidr(r!.cidr), '192.168.2.224/28');
  assert.equal(r!.start, v4('192.168.2.225'));
  assert.equal(r!.end, v4('192.168.2.238'));
});

test('parseNetworkConfig() honours range_start and range_end inside the span', () => {
  const [r] = parse({ range: '10.0.0.0/24', range_start: '10.0.0.10', range_end: '10.0.0.20' }).ipam.ranges;
  assert.equal(r!.start, v4('10.0.0.10'));
  assert.equal(r!.end, v4('10.0.0.20'));
});

test('parseNetworkConfig() ignores a range_start outside the span with a warning', () => {
  const config = parse({ range: '10.0.0.0/24', range_start: '10.0.0.0' });
  assert.equal(config.ipam.ranges[0]!.start, v4('10.0.0.1'));
  assert.match(config.warnings.join('\n'), /range_start 10\.0\.0\.0 .*ignored/);
});

test('parseNetworkConfig() reads A-B/len ranges', () => {
  const [r] = parse({ range: '10.0.0.10-10.0.0.20/24' }).ipam.ranges;
  assert.equal(formatCidr(r!.cidr), '10.0.0.0/24');
  assert.equal(r!.start, v4('10.0.0.10'));
  assert.equal(r!.end, v4('10.0.0.20'));
});

test('parseNetworkConfig() rejects range_end before range_start', () => {
  rejects(
    () => parse({ range: '10.0.0.0/24', range_start: '10.0.0.50', range_end: '10.0.0.10' }),
    /range_end 10\.0\.0\.10 is before/,
  );
});

test('parseNetworkConfig() rejects a range_start of the other family', () => {
  rejects(() => parse({ range: '10.0.0.0/24', range_start: 'fd00::1' }), /range_start fd00::1 is IPv6/);
});

test('parseNetworkConfig() masks CIDR excludes and treats single IPs as /32', () => {
  const [r] = parse({ range: '10.0.0.0/24', exclude: ['10.0.0.229/30', '10.0.0.7'] }).ipam.ranges;
  assert.deepEqual(r!.exclude, [
    { first: v4('10.0.0.7'), last: v4('10.0.0.7') },
    { first: v4('10.0.0.228'), last: v4('10.0.0.231') },
  ]);
});

test('parseNetworkConfig() names the bad exclude entry', () => {
  rejects(() => parse({ range: '10.0.0.0/24', exclude: ['10.0.0.0/30', 'garbage'] }), /ipam\.exclude\[1\] "garbage"/);
});

test('parseNetworkConfig() orders range first, then ipRanges, each with its own bounds', () => {
  const config = parse({
    range: '10.0.0.0/24',
    ipRanges: [{ range: 'fd00::/64', range_start: 'fd00::100', exclude: ['fd00::100/126'] }],
  });
  assert.deepEqual(
    config.ipam.ranges.map((r) => formatCidr(r.cidr)),
    ['10.0.0.0/24', 'fd00::/64'],
  );
  assert.equal(config.ipam.ranges[1]!.start, parseIP('fd00::100').value);
  assert.equal(config.ipam.ranges[1]!.exclude.length, 1);
});

test('parseNetworkConfig() attaches the gateway only to the range that contains it', () => {
  const config = parse({ gateway: '10.0.0.1', ipRanges: [{ range: '10.0.0.0/24' }, { range: 'fd00::/64' }] });
  assert.equal(formatIP(config.ipam.ranges[0]!.gateway!), '10.0.0.1');
  assert.equal(config.ipam.ranges[1]!.gateway, undefined);
});

test('parseNetworkConfig() serves /32 and /128 ranges', () => {
  const [a, b] = parse({ ipRanges: [{ range: '10.9.9.9/32' }, { range: 'fd00::9/128' }] }).ipam.ranges;
  assert.equal(a!.start, a!.end);
  assert.equal(b!.start, parseIP('fd00::9').value);
});

test('parseNetworkConfig() requires a range, ipRanges or addresses', () => {
  rejects(() => parse({}), /needs a range, ipRanges or addresses/);
});

test('parseNetworkConfig() accepts static addresses alone', () => {
  const config = parse({ addresses: [{ address: '10.1.1.5/24', gateway: '10.1.1.1' }] });
  assert.equal(formatCidr(config.ipam.addresses[0]!.address), '10.1.1.5/24');
});

test('parseNetworkConfig() accepts the whereabouts type name and rejects others', () => {
  assert.equal(parse({ type: 'whereabouts', range: '10.0.0.0/24' }).ipam.type, 'whereabouts');
  rejects(() => parse({ type: 'host-local', range: '10.0.0.0/24' }), /ipam\.type "host-local"/);
});

test('parseNetworkConfig() defaults: overlapping ranges on, log level error, local data_dir', () => {
  const config = parse({ range: '10.0.0.0/24' });
  assert.equal(config.ipam.enableOverlappingRanges, true);
  assert.equal(config.ipam.logLevel, 'error');
  assert.deepEqual(config.ipam.datastore, { kind: 'local', dataDir: '/var/lib/cni/hereabouts' });
});

test('parseNetworkConfig() needs a kubeconfig for the default kubernetes datastore', () => {
  rejects(() => parse({ datastore: undefined, range: '10.0.0.0/24' }), /needs ipam\.kubernetes\.kubeconfig/);
});

test('parseNetworkConfig() takes the kubeconfig from the flat file when inline keys lack it', () => {
  const flat = JSON.stringify({
    datastore: 'kubernetes',
    kubernetes: { kubeconfig: '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig' },
    log_level: 'debug',
  });
  const config = parse(
    { datastore: undefined, range: '10.0.0.0/24', log_level: 'info' },
    {},
    { readFile: (p) => (p === '/etc/cni/net.d/whereabouts.d/whereabouts.conf' ? flat : undefined) },
  );
  assert.deepEqual(config.ipam.datastore, {
    kind: 'kubernetes',
    kubeconfig: '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig',
    execCredentials: true,
    cacheDir: '/var/lib/cni/hereabouts/cache',
  });
  assert.equal(config.ipam.logLevel, 'info', 'inline keys win over the flat file');
  assert.equal(config.ipam.configurationPath, '/etc/cni/net.d/whereabouts.d/whereabouts.conf');
});

test('parseNetworkConfig() prefers hereabouts.d over whereabouts.d in the same directory', () => {
  const seen: string[] = [];
  parse({ range: '10.0.0.0/24' }, {}, { readFile: (p) => (seen.push(p), undefined) });
  assert.ok(
    seen.indexOf('/etc/cni/net.d/hereabouts.d/hereabouts.conf') <
      seen.indexOf('/etc/cni/net.d/whereabouts.d/whereabouts.conf'),
  );
});

test('parseNetworkConfig() reads configuration_path instead of the default search', () => {
  const flat = '/etc/cni/net.d/hereabouts.d/flat.conf';
  const config = parse(
    { range: '10.0.0.0/24', configuration_path: flat },
    {},
    { readFile: (p) => (p === flat ? '{"network_name":"blue"}' : undefined) },
  );
  assert.equal(config.ipam.networkName, 'blue');
});

test('parseNetworkConfig() rejects a missing configuration_path', () => {
  rejects(
    () => parse({ range: '10.0.0.0/24', configuration_path: '/etc/cni/net.d/hereabouts.d/none.conf' }),
    /configuration_path "\/etc\/cni\/net\.d\/hereabouts\.d\/none\.conf" does not exist/,
  );
});

test('parseNetworkConfig() rejects a flat file that is not JSON', () => {
  const bad = '/etc/cni/net.d/hereabouts.d/bad.conf';
  rejects(
    () =>
      parse(
        { range: '10.0.0.0/24', configuration_path: bad },
        {},
        { readFile: (p) => (p === bad ? '{nope' : undefined) },
      ),
    /configuration_path "\/etc\/cni\/net\.d\/hereabouts\.d\/bad\.conf" is not valid JSON/,
  );
});

test('parseNetworkConfig() rejects a network_name that is not a safe object-name prefix', () => {
  for (const bad of ['../../etc', 'Net1', 'a/b', '-x', 'x'.repeat(64)]) {
    rejects(() => parse({ range: '10.0.0.0/24', network_name: bad }), /ipam\.network_name/);
  }
});

test("parseNetworkConfig() refuses the network_name of AddressPools' own IPPools; names that only resemble it pass", () => {
  for (const bad of ['hereabouts-claims', 'hereabouts-claims.ns.tenant.pool', 'hereabouts-claims.global.p'])
    rejects(() => parse({ range: '10.0.0.0/24', network_name: bad }), /ipam\.network_name "[^"]+" is reserved/);
  for (const fine of ['hereabouts-claims2', 'my-hereabouts-claims', 'hereabouts'])
    assert.equal(parse({ range: '10.0.0.0/24', network_name: fine }).ipam.networkName, fine);
});

test('parseNetworkConfig() reads node_slice_size as "/26", "26" or 26', () => {
  for (const value of ['/26', '26', 26])
    assert.equal(parse({ range: '10.0.0.0/16', node_slice_size: value }).ipam.nodeSliceSize, 26);
});

test('parseNetworkConfig() rejects a node_slice_size larger than the range', () => {
  rejects(
    () => parse({ range: '10.0.0.0/24', node_slice_size: '/16' }),
    /node_slice_size \/16 does not fit range \/24/,
  );
  rejects(() => parse({ range: '10.0.0.0/24', node_slice_size: Infinity }), /node_slice_size/);
});

test('parseNetworkConfig() merges requested IPs from runtimeConfig, args and CNI_ARGS without duplicates', () => {
  const config = parse(
    { range: '10.0.0.0/24' },
    { runtimeConfig: { ips: ['10.0.0.5/24'] }, args: { cni: { ips: ['10.0.0.5', 'fd00::5'] } } },
    { cniArgs: parseCniArgs('IgnoreUnknown=1;IP=10.0.0.6') },
  );
  assert.deepEqual(config.requestedIPs.map(formatIP), ['10.0.0.5', 'fd00::5', '10.0.0.6']);
});

test('parseNetworkConfig() names a bad requested IP', () => {
  rejects(
    () => parse({ range: '10.0.0.0/24' }, { runtimeConfig: { ips: ['nope'] } }),
    /runtimeConfig\.ips\[0\] "nope"/,
  );
});

test('parseNetworkConfig() validates routes, dns and gateway', () => {
  rejects(() => parse({ range: '10.0.0.0/24', routes: [{ dst: '0.0.0.0/0', gw: 'x' }] }), /ipam\.routes\[0\]\.gw "x"/);
  rejects(() => parse({ range: '10.0.0.0/24', dns: { nameservers: ['1.1.1'] } }), /ipam\.dns\.nameservers\[0\]/);
  rejects(() => parse({ range: '10.0.0.0/24', gateway: '10.0.0.256' }), /ipam\.gateway "10\.0\.0\.256"/);
});

test('parseNetworkConfig() type-checks leader_* and sleep_for_race', () => {
  assert.equal(parse({ range: '10.0.0.0/24', leader_lease_duration: 1500, sleep_for_race: 0 }).ipam.ranges.length, 1);
  rejects(() => parse({ range: '10.0.0.0/24', leader_retry_period: '5s' }), /leader_retry_period/);
});

test("parseNetworkConfig() takes Whereabouts' leader_* timings (ms), its defaults for absent or 0 keys", () => {
  assert.deepEqual(parse({ range: '10.0.0.0/24' }).ipam.leaderTiming, {
    leaseDurationMs: 1500,
    renewDeadlineMs: 1000,
    retryPeriodMs: 500,
  });
  const config = parse({
    range: '10.0.0.0/24',
    leader_lease_duration: 4000,
    leader_renew_deadline: 0,
    leader_retry_period: 250,
  });
  assert.deepEqual(config.ipam.leaderTiming, { leaseDurationMs: 4000, renewDeadlineMs: 1000, retryPeriodMs: 250 });
  assert.deepEqual(config.warnings, []);
});

test("parseNetworkConfig() falls back to Whereabouts' leader defaults, with a warning, for timings client-go refuses", () => {
  const config = parse({ range: '10.0.0.0/24', leader_lease_duration: 900, leader_renew_deadline: 1000 });
  assert.deepEqual(config.ipam.leaderTiming, { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 500 });
  assert.match(config.warnings.join('\n'), /leader_lease_duration 900, leader_renew_deadline 1000/);
});

test('parseNetworkConfig() polls a Lease no faster than every 100 ms, whatever leader_retry_period says', () => {
  const config = parse({ range: '10.0.0.0/24', leader_retry_period: 1, leader_renew_deadline: 10 });
  assert.equal(config.ipam.leaderTiming?.retryPeriodMs, 100);
  assert.match(config.warnings.join('\n'), /leader_retry_period 1 is below 100 ms/);
});

test('parseNetworkConfig() requires an absolute data_dir and ignores a relative inline log_file', () => {
  rejects(() => parse({ range: '10.0.0.0/24', data_dir: 'rel' }), /ipam\.data_dir "rel" must be an absolute path/);
  const config = parse({ range: '10.0.0.0/24', log_file: 'x.log' });
  assert.equal(config.ipam.logFile, undefined);
  assert.match(config.ignored?.[0] ?? '', /ipam\.log_file "x\.log" must be an absolute path/);
});

test('parseNetworkConfig() rejects an invalid CNI network name', () => {
  assert.throws(
    () => parseNetworkConfig({ name: '../x', ipam: { type: 'hereabouts', range: '10.0.0.0/24' } }, noFlatFile),
    /name "\.\.\/x"/,
  );
});

// One request takes one address per range, and a range is one pool: the same pool twice would return one address
// twice, and overlapping pools would hand the same address to both entries.
test('parseNetworkConfig() rejects the same range twice in ipRanges with code 7, naming both keys and the value', () => {
  rejects(
    () => parse({ ipRanges: [{ range: '10.0.0.0/24' }, { range: '10.0.0.0/24' }] }),
    /ipam\.ipRanges\[1\]\.range "10\.0\.0\.0\/24" overlaps ipam\.ipRanges\[0\]\.range "10\.0\.0\.0\/24"/,
  );
});

test('parseNetworkConfig() rejects ipRanges repeating range, even with other bounds', () => {
  rejects(
    () =>
      parse({
        range: '10.0.0.0/24',
        range_end: '10.0.0.99',
        ipRanges: [{ range: '10.0.0.0/24', range_start: '10.0.0.100' }],
      }),
    /ipam\.ipRanges\[0\]\.range "10\.0\.0\.0\/24" overlaps ipam\.range "10\.0\.0\.0\/24"/,
  );
});

test('parseNetworkConfig() rejects overlapping (not identical) ranges in one request', () => {
  rejects(
    () => parse({ ipRanges: [{ range: '10.0.0.0/25' }, { range: '10.0.0.0/24' }] }),
    /ipRanges\[1\]\.range "10\.0\.0\.0\/24" overlaps ipam\.ipRanges\[0\]\.range "10\.0\.0\.0\/25"/,
  );
  rejects(() => parse({ ipRanges: [{ range: 'fd00::/64' }, { range: 'fd00::1:0/112' }] }), /overlaps/);
});

test('parseNetworkConfig() accepts disjoint ranges of one family and one range per family', () => {
  assert.equal(
    parse({ ipRanges: [{ range: '10.0.0.0/25' }, { range: '10.0.0.128/25' }, { range: 'fd00::/64' }] }).ipam.ranges
      .length,
    3,
  );
});

test('parseNetworkConfig() defaults gc_grace_seconds to 300 and takes a non-negative integer', () => {
  assert.equal(parse({ range: '10.0.0.0/24' }).ipam.gcGraceSeconds, 300);
  assert.equal(parse({ range: '10.0.0.0/24', gc_grace_seconds: 0 }).ipam.gcGraceSeconds, 0);
  rejects(
    () => parse({ range: '10.0.0.0/24', gc_grace_seconds: -5 }),
    /ipam\.gc_grace_seconds must be a non-negative integer, got -5/,
  );
  rejects(() => parse({ range: '10.0.0.0/24', gc_grace_seconds: '60' }), /ipam\.gc_grace_seconds/);
});
