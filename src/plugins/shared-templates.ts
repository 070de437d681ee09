/** Compile-time questions about templated config text, for streaming inference. */

const RESPONSE_BODY = /\{\{\s*response\.body\s*\}\}/;
const LEGACY_RESPONSE_BODY = /\$(?:resp_body(?![A-Za-z0-9_])|\{resp_body\})/;

/**
 * True when `text` references the response body (`{{response.body}}`, plus
 * `$resp_body` / `${resp_body}` when the field is one of the legacy groups).
 * A node whose config renders such a field after the upstream must make that
 * upstream buffer (SPEC "Streaming").
 */
export function referencesResponseBody(text: string | undefined, legacy = false): boolean {
  if (text === undefined || text === '') return false;
  return RESPONSE_BODY.test(text) || (legacy && LEGACY_RESPONSE_BODY.test(text));
}
