// What every verb handler receives: the validated request, an open store and the logger.
import type { NetworkConfig } from '../../config/types.ts';
import { poolRefs } from '../../store/pool-refs.ts';
import type { PoolPurpose, PoolRef, Store } from '../../store/store.ts';
import type { CniArgs } from '../args.ts';
import type { Attachment } from '../../ipam/attachment.ts';
import { bindingOf } from '../../ipam/sticky.ts';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import type { Logger } from '../../log/logger.ts';
import type { CniVersion } from '../version.ts';

export interface VerbContext {
  readonly config: NetworkConfig;
  readonly store: Store;
  readonly logger: Logger;
  readonly version: CniVersion;
}

/** The attachment a runtime names: container id + ifname, and the pod from CNI_ARGS when kubelet sent one. */
export function attachmentOf(env: { containerId: string; ifname: string; args: CniArgs }): Attachment {
  const { podNamespace, podName, podUid } = env.args;
  const podRef = podNamespace !== undefined && podName !== undefined ? `${podNamespace}/${podName}` : '';
  return { containerId: env.containerId, ifname: env.ifname, podRef, ...(podUid === undefined ? {} : { podUid }) };
}

/**
 * On a sticky network (docs/sticky.md), the attachment with the identity its addresses bind to: from the node agent's
 * watch of its node's pods, else one read of the pod. A pod the cluster does not show (not yet, or no more, under
 * this UID) gets code 11: kubelet tries the sandbox again, and a replica never takes an ordinary address by chance.
 */
export async function withBinding(ctx: VerbContext, attachment: Attachment, args: CniArgs): Promise<Attachment> {
  const mode = ctx.config.ipam.sticky;
  const { podNamespace, podName, podUid } = args;
  if (mode === undefined || podNamespace === undefined || podName === undefined) return attachment;
  if (ctx.store.podFacts === undefined) return attachment;
  const facts = await ctx.store.podFacts(podNamespace, podName, podUid);
  if (facts === undefined) {
    throw new HereaboutsError(
      ErrorKind.Unavailable,
      `pod ${podNamespace}/${podName}${podUid === undefined ? '' : ` (uid ${podUid})`} is not known to the API server`,
      { details: 'a sticky network binds addresses to the pod owner: the ADD is tried again once the pod shows' },
    );
  }
  const binding = bindingOf(mode, podName, facts);
  return binding === undefined ? attachment : { ...attachment, binding };
}

/** The pools of this request: the store's own answer (node slices) or one per configured range. */
export async function poolsOf(
  ctx: VerbContext,
  purpose: PoolPurpose,
  sticky = false,
): Promise<{ pools: readonly PoolRef[] }> {
  const pools = (await ctx.store.resolvePools?.(ctx.config, { purpose, sticky })) ?? poolRefs(ctx.config);
  // A sticky ADD decides on the pools as the API has them (store.ts PoolRef.synchronous).
  if (sticky) return { pools: pools.map((pool) => ({ ...pool, synchronous: true })) };
  return { pools };
}
