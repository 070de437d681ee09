/**
 * What `switchyard import` tells the operator on stderr: every source item it could not map,
 * with the reason (any of them makes the exit code 1), and the differences of what it did map.
 * Entries name where the item was in the source file and never quote a value, so a credential
 * or a password in a store URL never reaches a terminal or a CI log.
 */
export interface ReportEntry {
  /** Where in the source: `services[users].plugins[rate-limiting].config.path`. */
  where: string;
  reason: string;
}

export class ImportReport {
  readonly unmapped: ReportEntry[] = [];
  readonly notes: ReportEntry[] = [];
  /** system.yaml lines the operator has to add by hand (certificates). */
  readonly systemYaml: string[] = [];
  readonly #seen = new Set<string>();

  /** An item that has no equivalent in the output: the exit code becomes 1. */
  unmappedItem(where: string, reason: string): void {
    const key = `u\u0000${where}\u0000${reason}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.unmapped.push({ where, reason });
  }

  /** A mapped item that behaves differently from the source in a way a client may notice. */
  note(where: string, reason: string): void {
    const key = `n\u0000${where}\u0000${reason}`;
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    this.notes.push({ where, reason });
  }

  /** The report as stderr lines. */
  format(source: string): string {
    const lines: string[] = [];
    for (const e of this.unmapped) lines.push(`not mapped: ${e.where}: ${e.reason}`);
    for (const e of this.notes) lines.push(`differs: ${e.where}: ${e.reason}`);
    if (this.systemYaml.length > 0) {
      lines.push('add to system.yaml (certificates are read at start, not from gateway.yaml):');
      for (const line of this.systemYaml) lines.push(`  ${line}`);
    }
    lines.push(
      this.unmapped.length === 0
        ? `every item of ${source} was mapped (${this.notes.length} difference(s) listed)`
        : `${this.unmapped.length} item(s) of ${source} not mapped, ${this.notes.length} difference(s)`,
    );
    return lines.join('\n') + '\n';
  }
}
