/** Bench templates carry @@PLACEHOLDERS@@ and a repeat block; expand them to plain YAML. */
export function expandBench(text: string): string {
  const repeated = text.replace(/@@REPEAT (\d+)@@\n([\s\S]*?)@@END@@\n?/g, (_m, n: string, body: string) =>
    Array.from({ length: Number(n) }, (_, i) => body.replaceAll('@@I@@', String(i))).join(''),
  );
  return repeated
    .replaceAll('@@UPSTREAM_HOST@@', '127.0.0.1')
    .replaceAll('@@UPSTREAM_PORT@@', '3000')
    .replaceAll('@@API_KEY@@', 'bench-key')
    .replaceAll('@@JWT_SECRET@@', 'bench-secret-bench-secret-bench-secret')
    .replaceAll('@@CONFIG_DIR@@', '/tmp');
}
