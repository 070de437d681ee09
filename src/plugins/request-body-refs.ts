/**
 * Whether a node's configuration names the request body anywhere: a `{{request.body}}` template, a
 * legacy `$request_body` / `$post_arg_<field>` variable, a `post_arg_` condition variable, or the
 * whole `{{request}}` object. Nodes that read the body only through such references declare
 * `readsRequestBody: configReadsRequestBody`, so their policies stream request bodies unless an
 * instance names it (docs/routing.md#request-bodies). A false positive only buffers.
 */
const REFERENCE =
  /\brequest\s*\.\s*body\b|\brequest_body\b|\bpost_arg_|\brequest\s*\[\s*\\?["']body|\{\{[^}]*\brequest\b(?!\s*\.)/;

export function configReadsRequestBody(config: unknown): boolean {
  return config !== undefined && REFERENCE.test(JSON.stringify(config) ?? '');
}
