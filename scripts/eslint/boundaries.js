// ESLint rule `tollgate/boundaries`: forbids relative imports that cross the module boundaries
// of docs/architecture.md §4. Zones use the shape of import-x/no-restricted-paths
// ({target, from, except, message}, paths relative to the project root, `except` relative to
// `from`). Written in-repo because eslint-plugin-import-x pulls a native resolver whose
// platform packages the registry here does not carry, which breaks `npm ci`.
import path from 'node:path';

const asList = (v) => (Array.isArray(v) ? v : [v]);
const inside = (file, dir) => file === dir || file.startsWith(dir + path.sep);

export const boundaries = {
  meta: {
    type: 'problem',
    docs: { description: 'enforce the module boundaries of docs/architecture.md §4' },
    schema: [{ type: 'object', properties: { root: { type: 'string' }, zones: { type: 'array' } }, required: ['root', 'zones'] }],
  },
  create(context) {
    const { root, zones } = context.options[0];
    const file = context.filename;
    const active = zones
      .map((z) => ({
        targets: asList(z.target).map((t) => path.resolve(root, t)),
        froms: asList(z.from).map((f) => path.resolve(root, f)),
        except: asList(z.except ?? []),
        message: z.message,
      }))
      .filter((z) => z.targets.some((t) => inside(file, t)));
    if (active.length === 0) return {};
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const resolved = path.resolve(path.dirname(file), spec);
      for (const z of active) {
        for (const from of z.froms) {
          if (!inside(resolved, from)) continue;
          if (z.except.some((e) => inside(resolved, path.resolve(from, e)))) continue;
          context.report({ node: node.source, message: `Import of "${spec}" crosses a module boundary: ${z.message}` });
          return;
        }
      }
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
  },
};
