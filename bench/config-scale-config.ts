/**
 * A gateway.yaml with `count` routes and `count` policies, for bench/config-scale.ts and
 * test/engine/config-scale.test.ts. Routes mix exact paths with methods, `/*` prefixes and host
 * routes; policies alternate between a templated mocking answer and the shipped
 * rewrite → upstream → error-handler chain, so compile exercises templates, schemas and pools.
 * `version` changes every mocking answer, so a reload is visible in responses.
 */
export function scaleConfigYaml(count: number, options: { upstreamPort: number; version?: string }): string {
  const version = options.version ?? 'v1';
  const lines: string[] = ['routes:'];
  for (let i = 0; i < count; i++) {
    lines.push(`  - name: r${i}`);
    switch (i % 3) {
      case 0:
        lines.push(`    match: { path: /items/${i}, methods: [GET, HEAD] }`);
        break;
      case 1:
        lines.push(`    match: { path: /svc${i}/* }`);
        break;
      default:
        lines.push(`    match: { path: /h/*, host: svc${i}.example.test }`);
    }
    lines.push(`    policy: p${i}`);
  }
  lines.push('policies:');
  for (let i = 0; i < count; i++) {
    lines.push(`  - name: p${i}`);
    if (i % 2 === 0) {
      lines.push(
        '    nodes:',
        '      - { id: listener, type: listener }',
        `      - { id: answer, type: mocking, config: { response_status: 200, content_type: text/plain, response_example: '${version} p${i} {{request.path}}' } }`,
        '      - { id: client, type: client }',
        '    edges:',
        '      - { from: listener.out, to: answer.in }',
        '      - { from: answer.success, to: client.in }',
      );
    } else {
      lines.push(
        '    error_handler: oops',
        '    nodes:',
        '      - { id: listener, type: listener }',
        `      - { id: rewrite, type: proxy-rewrite, config: { phase: request, strip_path_prefix: /svc${i} } }`,
        `      - { id: backend, type: upstream, config: { targets: [{ host: 127.0.0.1, port: ${options.upstreamPort} }], timeout_ms: 5000 } }`,
        `      - { id: oops, type: error-handler, config: { status_code: 502, body_template: '{"error": "{{error.code}}"}' } }`,
        '      - { id: client, type: client }',
        '    edges:',
        '      - { from: listener.out, to: rewrite.in }',
        '      - { from: rewrite.success, to: backend.in }',
        '      - { from: backend.success, to: client.in }',
        '      - { from: backend.error, to: oops.in }',
        '      - { from: oops.success, to: client.in }',
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
