// Replaced at bundle time by esbuild `define`; these fallbacks are what `node src/cli/main.ts` prints.
declare const __HEREABOUTS_VERSION__: string | undefined;
declare const __HEREABOUTS_COMMIT__: string | undefined;

export const buildInfo = {
  version: typeof __HEREABOUTS_VERSION__ === 'string' ? __HEREABOUTS_VERSION__ : '0.0.0-dev',
  commit: typeof __HEREABOUTS_COMMIT__ === 'string' ? __HEREABOUTS_COMMIT__ : 'unknown',
};
