import type { ImportReport } from './import-report.js';
import type { ImportResult, Obj } from './import-source.js';

export function importApisix(_doc: Obj, report: ImportReport): ImportResult {
  report.unmappedItem('', 'not yet');
  return { gateway: {}, files: [] };
}
