import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An `acme.dns_hook` exec command for tests: publishes the TXT record through
 * pebble-challtestsrv's management API (`/set-txt`, `/clear-txt`; record name
 * and value from the SWITCHYARD_ACME_* environment) and appends its argv
 * (action, domain, record name, value) to `log`, so a test sees both ways the
 * record reaches a hook. Returns the `command:` list.
 */
export function writeChalltestHook(dir: string, managementUrl: string, log: string): string[] {
  const path = join(dir, 'challtest-hook.sh');
  writeFileSync(
    path,
    `#!/bin/sh
mgmt="$1"; log="$2"; shift 2
echo "$*" >> "$log"
case "$SWITCHYARD_ACME_ACTION" in
  present) exec curl -fsS -X POST -d "{\\"host\\":\\"$SWITCHYARD_ACME_RECORD_NAME.\\",\\"value\\":\\"$SWITCHYARD_ACME_VALUE\\"}" "$mgmt/set-txt" ;;
  cleanup) exec curl -fsS -X POST -d "{\\"host\\":\\"$SWITCHYARD_ACME_RECORD_NAME.\\"}" "$mgmt/clear-txt" ;;
esac
exit 9
`,
  );
  chmodSync(path, 0o755);
  return [path, managementUrl, log];
}
