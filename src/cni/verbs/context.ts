// What every verb handler receives: the validated request, an open store and the logger.
import type { NetworkConfig } from '../../config/types.ts';
import { poolRefs } from '../../store/pool-refs.ts';
import type { PoolPurpose, PoolRef, Store } from '../../store/store.ts';
import type { CniArgs } from '../args.ts';
import type { Attachment } from '../../ipam/attachment.ts';
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

/** The pools of this request: the store's own answer (node slices) or one per configured range. */
export async function poolsOf(ctx: VerbContext, purpose: PoolPurpose): Promise<{ pools: readonly PoolRef[] }> {
  const pools = (await ctx.store.resolvePools?.(ctx.config, { purpose })) ?? poolRefs(ctx.config);
  return { pools };
}
