// What hereabouts will make of one NetworkAttachmentDefinition, judged by the plugin's own config parser (src/config)
// on the inline config as a node would receive it, with the flat file the shipped DaemonSet writes and the default
// trust policy (no file is read; the trust check lstats the directories of a path as the plugin does on a node,
// here on this machine). Findings say what the plugin refuses (with a fix), what it accepts and
// ignores, and where it behaves otherwise than Whereabouts.
import { HereaboutsError, messageOf } from '../errors.ts';
import { parseNetworkConfig } from '../config/parse.ts';
import { allowedPath, DEFAULT_POLICY } from '../config/trust.ts';
import type { RangeConfig } from '../config/types.ts';
import { formatIP } from '../ip/address.ts';
import { renderFlatConfig } from '../install/host-files.ts';
import { isRecord, recordOf } from '../record.ts';
import { fixFor, policyRefuses } from './preflight-fixes.ts';

/** The host CNI config dir of the shipped DaemonSet, where its installer writes hereabouts.d/. */
const HOST_CONF_DIR = '/etc/cni/net.d';
const FLAT_FILE = `${HOST_CONF_DIR}/hereabouts.d/hereabouts.conf`;
const FLAT_CONTENT = renderFlatConfig(`${HOST_CONF_DIR}/hereabouts.d/hereabouts.kubeconfig`);

/** Whereabouts' Lease timings: hereabouts uses them only to take part in that Lease while Whereabouts writes a pool. */
const LEASE_TIMING_KEYS = ['leader_lease_duration', 'leader_renew_deadline', 'leader_retry_period'];

export type FindingKind = 'refused' | 'ignored' | 'differs' | 'note';

export interface Finding {
  readonly kind: FindingKind;
  readonly message: string;
  /** For a refusal: what to change. */
  readonly fix?: string;
  /** The plugin of a conflist the finding is about ("plugins[1]"). */
  readonly plugin?: string;
  /** The shipped admission policy refuses a config with this when it is written (deploy/admission-policy.yaml). */
  readonly admission?: true;
}

export type Verdict = 'same' | 'differs' | 'refuses';

export interface NadJudgement {
  readonly namespace: string;
  readonly name: string;
  readonly verdict: Verdict;
  readonly findings: readonly Finding[];
}

/** A NAD without hereabouts/whereabouts IPAM, one without spec.config (Multus reads a node's file), or a judgement. */
export type NadOutcome =
  | { readonly kind: 'other' }
  | { readonly kind: 'no-config'; readonly namespace: string; readonly name: string }
  | ({ readonly kind: 'judged' } & NadJudgement);

const isOurs = (ipam: unknown): boolean =>
  isRecord(ipam) && (ipam['type'] === 'hereabouts' || ipam['type'] === 'whereabouts');

export function judgeNad(nad: unknown): NadOutcome {
  const meta = recordOf(recordOf(nad)['metadata']);
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  const id = { namespace: text(meta['namespace']), name: text(meta['name']) };
  const source = recordOf(recordOf(nad)['spec'])['config'];
  if (typeof source !== 'string' || source.trim() === '') return { kind: 'no-config', ...id };
  let config: unknown;
  try {
    config = JSON.parse(source);
  } catch (err) {
    if (!/"(?:here|where)abouts"/.test(source)) return { kind: 'other' };
    const message = `spec.config is not JSON (${messageOf(err)})`;
    return judged(id, [{ kind: 'refused', message, fix: 'repair the JSON of spec.config' }]);
  }
  const conf = recordOf(config);
  const list = Array.isArray(conf['plugins']) ? (conf['plugins'] as unknown[]) : undefined;
  const plugins = (list ?? [conf]).map((p, i) => ({
    plugin: recordOf(p),
    at: list === undefined ? '' : `plugins[${i}]`,
  }));
  const ours = plugins.filter((p) => isOurs(p.plugin['ipam']));
  if (ours.length === 0) return { kind: 'other' };
  const findings = ours.flatMap(({ plugin, at }) => {
    // A conflist's plugin gets the list's name and cniVersion from the runtime.
    const request = list === undefined ? plugin : { ...plugin, name: conf['name'], cniVersion: conf['cniVersion'] };
    return judgeSection(request).map((f) => (at === '' ? f : { ...f, plugin: at }));
  });
  return judged(id, findings);
}

function judged(id: { namespace: string; name: string }, findings: Finding[]): NadOutcome {
  const verdict: Verdict = findings.some((f) => f.kind === 'refused')
    ? 'refuses'
    : findings.some((f) => f.kind === 'ignored' || f.kind === 'differs')
      ? 'differs'
      : 'same';
  return { kind: 'judged', ...id, verdict, findings };
}

/** One plugin's IPAM section, as the plugin on a node parses it. */
function judgeSection(request: Record<string, unknown>): Finding[] {
  const findings: Finding[] = [];
  const ipam = { ...recordOf(request['ipam']) };
  // An inline log_file outside the allowed log directories is ignored by the plugin (it logs where the node's flat
  // file says), never followed and never a reason to fail an ADD.
  const logFile = ipam['log_file'];
  if (typeof logFile === 'string' && logFile !== '') {
    try {
      allowedPath(DEFAULT_POLICY, 'log', 'ipam.log_file', logFile);
    } catch (err) {
      if (!(err instanceof HereaboutsError)) throw err;
      findings.push({
        kind: 'ignored',
        message: `${err.message}: ignored; the plugin logs where the node's flat file says`,
      });
      delete ipam['log_file'];
    }
  }
  const configurationPath = ipam['configuration_path'];
  if (typeof configurationPath === 'string' && configurationPath !== '') {
    findings.push({
      kind: 'note',
      message: `ipam.configuration_path ${JSON.stringify(configurationPath)} is read on each node: checked as if it held what hereabouts' installer writes`,
    });
  }
  findings.push(...acceptedAndIgnored(ipam));
  let parsed;
  try {
    parsed = parseNetworkConfig(
      { ...request, ipam },
      {
        cniVersion: typeof request['cniVersion'] === 'string' ? request['cniVersion'] : '1.0.0',
        env: {},
        readFile: (path) => (path === FLAT_FILE || path === configurationPath ? FLAT_CONTENT : undefined),
      },
    );
  } catch (err) {
    if (!(err instanceof HereaboutsError)) throw err;
    return [
      ...findings,
      {
        kind: 'refused',
        message: err.message,
        fix: fixFor(err.message, err.details),
        ...(policyRefuses(err.message) ? { admission: true as const } : {}),
      },
    ];
  }
  for (const warning of parsed.warnings) {
    findings.push({
      kind: 'ignored',
      message: warning,
      ...(policyRefuses(warning) ? { admission: true as const } : {}),
    });
  }
  findings.push(...gatewayKeptBack(parsed.ipam.ranges));
  return findings;
}

/** Keys Whereabouts acts on that hereabouts uses only beside Whereabouts (the Lease timings) or ignores. */
function acceptedAndIgnored(ipam: Readonly<Record<string, unknown>>): Finding[] {
  const findings: Finding[] = [];
  const present = LEASE_TIMING_KEYS.filter((key) => ipam[key] !== undefined && ipam[key] !== null);
  if (present.length > 0) {
    findings.push({
      kind: 'note',
      message: `${present.map((k) => `ipam.${k}`).join(', ')}: used only while a Whereabouts plugin still writes the pool, to take part in its Lease as Whereabouts does; hereabouts takes no cluster-wide lease of its own`,
    });
  }
  if (ipam['sleep_for_race'] !== undefined && ipam['sleep_for_race'] !== null) {
    findings.push({
      kind: 'ignored',
      message: 'ipam.sleep_for_race: accepted and ignored (hereabouts takes no cluster-wide lease)',
    });
  }
  if (ipam['reconciler_cron_expression'] !== undefined) {
    findings.push({
      kind: 'ignored',
      message:
        'ipam.reconciler_cron_expression: ignored (the controller reconciles every --reconcile-interval, and after pod deletions)',
    });
  }
  return findings;
}

/** A gateway inside the span a range hands out: Whereabouts may give it to a pod, hereabouts never does. */
function gatewayKeptBack(ranges: readonly RangeConfig[]): Finding[] {
  return ranges.flatMap((range) => {
    const gw = range.gateway?.value;
    if (gw === undefined || gw < range.start || gw > range.end) return [];
    if (range.exclude.some((block) => gw >= block.first && gw <= block.last)) return [];
    const address = formatIP({ family: range.cidr.family, value: gw });
    return [
      {
        kind: 'differs',
        message: `ipam.gateway ${address} is never handed out (Whereabouts may hand it out to a pod)`,
      },
    ];
  });
}
