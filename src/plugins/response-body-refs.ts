/** Whether a templated config string reads the response body (docs/configuration.md#streaming inference). */

const TEMPLATE_REF = /\{\{\s*response\.body\s*\}\}/;
const LEGACY_REF = /\$(?:resp_body\b|\{resp_body\})/;

/** True when `text` renders `{{response.body}}`, or `$resp_body` / `${resp_body}` in a legacy field. */
export function mentionsResponseBody(text: string | undefined, legacy: boolean): boolean {
  if (text === undefined) return false;
  return TEMPLATE_REF.test(text) || (legacy && LEGACY_REF.test(text));
}
