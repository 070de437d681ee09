export { compileTemplate, type CompileTemplateOptions, type TemplateWhere } from './compile.js';
export { templateFor } from './template-for.js';
export { listVars, type VarInfo } from './catalog.js';
export { listEnvVarNames } from './env-vars.js';
export type { Phase } from './readers.js';
