// CNI_ARGS ("K=V;K=V"), parsed as libcni's types.LoadArgs does: every pair needs exactly one "=", keys are
// case-sensitive, the last duplicate wins, and keys we do not know are an error unless IgnoreUnknown is set
// (kubelet and Multus always send IgnoreUnknown=1). One leniency over libcni: empty segments ("A=1;") are
// skipped instead of rejected.
import { parseIP, type IPAddress } from '../ip/address.ts';
import { parseCidr, addressOf } from '../ip/cidr.ts';
import { CniCode, CniError } from './errors.ts';
import { quote } from '../log/quote.ts';

export interface CniArgs {
  readonly podName?: string;
  readonly podNamespace?: string;
  readonly podUid?: string;
  readonly podInfraContainerId?: string;
  /** `IP=`: requested addresses, comma-separated; an "/len" suffix is accepted and dropped. */
  readonly ips: readonly IPAddress[];
  readonly ignoreUnknown: boolean;
  /** Every pair as given (last duplicate wins), including GATEWAY and ignored unknown keys. */
  readonly raw: ReadonlyMap<string, string>;
}

/** Keys we interpret, plus GATEWAY, which Whereabouts accepts (and so must we, to stay drop-in). */
const knownKeys: ReadonlySet<string> = new Set([
  'K8S_POD_NAME',
  'K8S_POD_NAMESPACE',
  'K8S_POD_UID',
  'K8S_POD_INFRA_CONTAINER_ID',
  'IP',
  'GATEWAY',
  'IgnoreUnknown',
]);

export const emptyCniArgs: CniArgs = { ips: [], ignoreUnknown: false, raw: new Map() };

/** Parses the CNI_ARGS text; any malformed pair or value is a CniError with code 4 naming it. */
export function parseCniArgs(text: string | undefined): CniArgs {
  if (text === undefined || text === '') return emptyCniArgs;
  const raw = new Map<string, string>();
  for (const pair of text.split(';')) {
    if (pair === '') continue;
    const parts = pair.split('=');
    if (parts.length !== 2 || parts[0] === '') {
      throw envError(`CNI_ARGS pair ${quote(pair)} is not KEY=VALUE`);
    }
    raw.set(parts[0] as string, parts[1] as string);
  }

  const ignoreUnknown = parseBool(raw.get('IgnoreUnknown'));
  const unknown = [...raw.keys()].filter((k) => !knownKeys.has(k));
  if (unknown.length > 0 && !ignoreUnknown) {
    throw envError(
      `CNI_ARGS has unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => quote(k)).join(', ')}` +
        ' (set IgnoreUnknown=1 to allow them)',
    );
  }
  return {
    ...optional('podName', raw.get('K8S_POD_NAME')),
    ...optional('podNamespace', raw.get('K8S_POD_NAMESPACE')),
    ...optional('podUid', raw.get('K8S_POD_UID')),
    ...optional('podInfraContainerId', raw.get('K8S_POD_INFRA_CONTAINER_ID')),
    ips: parseIPList(raw.get('IP')),
    ignoreUnknown,
    raw,
  };
}

// libcni's UnmarshallableBool: "1"/"true" and "0"/"false", case-insensitive.
function parseBool(value: string | undefined): boolean {
  if (value === undefined) return false;
  switch (value.toLowerCase()) {
    case '1':
    case 'true':
      return true;
    case '0':
    case 'false':
      return false;
    default:
      throw envError(`CNI_ARGS IgnoreUnknown=${quote(value)} is not a boolean (1, 0, true or false)`);
  }
}

function parseIPList(value: string | undefined): IPAddress[] {
  if (value === undefined || value === '') return [];
  return value.split(',').map((item) => {
    const text = item.trim();
    try {
      return text.includes('/') ? addressOf(parseCidr(text)) : parseIP(text);
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
      throw envError(`CNI_ARGS IP=${quote(value)} has an invalid address ${quote(text)}`);
    }
  });
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return value === undefined || value === '' ? {} : ({ [key]: value } as { [P in K]?: string });
}

function envError(msg: string): CniError {
  return new CniError(CniCode.InvalidEnvironment, msg);
}
