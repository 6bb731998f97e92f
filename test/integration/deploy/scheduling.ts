// Which nodes a pod spec may be scheduled on, by its nodeSelector and its required node affinity, with the rules of
// kube-scheduler's NodeAffinity filter: every nodeSelector label equal, and, when there are required terms, at least
// one term whose matchExpressions all hold (an empty term matches no node). Preferred terms only rank nodes.

export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  readonly values?: readonly string[];
}

interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  readonly matchFields?: readonly unknown[];
}

export interface Placement {
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly affinity?: {
    readonly nodeAffinity?: {
      readonly requiredDuringSchedulingIgnoredDuringExecution?: { readonly nodeSelectorTerms: readonly NodeSelectorTerm[] };
    };
  };
}

/** A node's labels as kubelet sets them for its platform. */
export const platformLabels = (os: string, arch: string): Record<string, string> => ({
  'kubernetes.io/os': os,
  'kubernetes.io/arch': arch,
  'kubernetes.io/hostname': `node-${os}-${arch}`,
});

export function admits(spec: Placement, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) if (labels[key] !== value) return false;
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) return true;
  return required.nodeSelectorTerms.some((term) => {
    if ((term.matchFields ?? []).length > 0) throw new Error('matchFields is not modelled here');
    const expressions = term.matchExpressions ?? [];
    return expressions.length > 0 && expressions.every((r) => holds(r, labels));
  });
}

function holds(r: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value) || values.length !== 1) return false;
      const [a, b] = [BigInt(value), BigInt(values[0]!)];
      return r.operator === 'Gt' ? a > b : a < b;
    }
  }
}

/** The platforms a test checks: the image's two, and some it must not land on. */
export const PLATFORMS: ReadonlyArray<{ readonly os: string; readonly arch: string; readonly image: boolean }> = [
  { os: 'linux', arch: 'amd64', image: true },
  { os: 'linux', arch: 'arm64', image: true },
  { os: 'linux', arch: 's390x', image: false },
  { os: 'linux', arch: 'ppc64le', image: false },
  { os: 'windows', arch: 'amd64', image: false },
];
