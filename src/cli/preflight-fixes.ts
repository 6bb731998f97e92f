// For `hereabouts preflight`: what to change for each refusal of the plugin's config parser, and which of its
// messages the shipped admission policy (deploy/admission-policy.yaml) gives too, when a NAD is written.

const FIXES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^spec\.config is not JSON/, 'repair the JSON of spec.config'],
  [
    / overlaps .*must not overlap$/,
    'give each range of the config a CIDR of its own: no range may equal or contain another (a second network ' +
      'with the same addresses needs its own NAD and network_name)',
  ],
  [
    / gives (?:IPPool|OverlappingRangeIPReservation) name/,
    'set ipam.network_name: it prefixes the object names, or choose another range',
  ],
  [
    /^ipam\.(?:ipRanges\[\d+\]\.)?range: /,
    'write the range as a CIDR ("10.0.0.0/24") or as A-B/len with A inside B/len ("10.0.0.10-10.0.0.50/24")',
  ],
  [
    /^ipam\.ipRanges(?:\[\d+\])? must be |^ipam\.ipRanges\[\d+\]\.range (?:is required|must be)|^ipam\.range must be/,
    'write ipam.range as a string, and ipRanges as a list of objects like {"range": "10.0.0.0/24"}',
  ],
  [
    /^ipam\.(?:ipRanges\[\d+\]\.)?range_(?:start|end) /,
    'set range_start and range_end to addresses of the range (range_start first), or remove them',
  ],
  [/^ipam\.node_slice_size /, 'set node_slice_size to a prefix length no shorter than the range\'s ("/26" in a /24)'],
  [
    /^(?:ipam\.network_name |name .*cannot name a NodeSlicePool)/,
    'set ipam.network_name to lowercase letters, digits, "-" and "." (at most 63 characters)',
  ],
  [
    /^ipam\.datastore /,
    'use "datastore": "kubernetes" (the default): hereabouts has no etcd store, and an etcd network\'s allocations ' +
      'do not move to it',
  ],
];

/** What to change: the first matching rule, else the error's own advice, else a pointer to the key it names. */
export function fixFor(message: string, details: string): string {
  if (/outside the directories the node's operator allows/.test(message)) {
    return `remove the key or move the path into an allowed directory${details === '' ? '' : `, or ${details}`}`;
  }
  const rule = FIXES.find(([pattern]) => pattern.test(message));
  if (rule !== undefined) return rule[1];
  return details !== '' ? details : 'change the key the message names in spec.config';
}

// Messages of the checks the admission policy makes: range text and prefix length, the bounds (their type, family,
// order and place in the usable addresses), ipRanges' shape, overlaps, node_slice_size, network_name.
const POLICY_MESSAGES: readonly RegExp[] = [
  /^ipam\.(?:ipRanges\[\d+\]\.)?(?:range[: ]|range_start |range_end )(?!.* gives (?:IPPool|OverlappingRangeIPReservation) name)/,
  /^ipam\.ipRanges(?:\[\d+\])? must be /,
  /^ipam\.(?:node_slice_size|network_name) /,
];

/** Does the shipped admission policy refuse a config that draws this message from the parser? */
export function policyRefuses(message: string): boolean {
  return POLICY_MESSAGES.some((pattern) => pattern.test(message));
}
