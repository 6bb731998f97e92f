// DEL: release what this container+ifname holds in every range; unknown attachments and a missing netns are fine.
import { release } from '../../ipam/release.ts';
import type { DelEnv } from '../env.ts';
import { attachmentOf, poolsOf, type VerbContext } from './context.ts';

export async function cmdDel(ctx: VerbContext & { env: DelEnv }): Promise<void> {
  await release(ctx.store, ctx.config, attachmentOf(ctx.env), await poolsOf(ctx, 'release'));
  ctx.logger.info('released');
}
