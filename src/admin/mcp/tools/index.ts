import { purgeCacheTool } from './cache.js';
import { catalogTools } from './catalog.js';
import { configTools } from './config.js';
import { debugTools } from './debug.js';
import { reloadTool } from './reload.js';
import type { ToolDef } from './types.js';
import { writeToolsAll } from './writes.js';
import { historyTools } from './history.js';

/** Every tool, in the order tools/list shows them (grouped by area; each tool declares its scope). */
export const TOOLS: readonly ToolDef[] = [
  ...catalogTools,
  ...configTools,
  ...debugTools,
  ...writeToolsAll,
  reloadTool,
  purgeCacheTool,
  ...historyTools,
];

export const toolByName = (name: string): ToolDef | undefined => TOOLS.find((t) => t.name === name);

export type { ToolContext, ToolDef } from './types.js';
