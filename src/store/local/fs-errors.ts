// Narrow catches need the errno code of a Node system error without trusting its shape.
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code: unknown = err.code;
  return typeof code === 'string' ? code : undefined;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
