import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';

/**
 * The import graph of our own source as the bundler sees it: static imports and re-exports, and
 * `import()` calls, resolved to repository paths. Type-only imports (`import type`, `typeof
 * import(...)`) are left out: they are erased before bundling and load nothing.
 */
export type EdgeKind = 'static' | 'dynamic';
export type Graph = Map<string, Map<string, EdgeKind>>;

/** The relative imports of one file, resolved against its path (`shared/a/b.ts`). */
export function importsOf(file: string, text: string): { to: string; kind: EdgeKind }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: { to: string; kind: EdgeKind }[] = [];
  const add = (specifier: ts.Expression | undefined, kind: EdgeKind) => {
    if (!specifier || !ts.isStringLiteralLike(specifier) || !specifier.text.startsWith('.')) return;
    found.push({ to: normalize(join(dirname(file), specifier.text)), kind });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      if (!node.importClause?.isTypeOnly) add(node.moduleSpecifier, 'static');
    } else if (ts.isExportDeclaration(node)) {
      if (!node.isTypeOnly) add(node.moduleSpecifier, 'static');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], 'dynamic');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The graph over the given files (path → text); an edge to the same target keeps `static` if any import is. */
export function graphOf(files: Map<string, string>): Graph {
  const graph: Graph = new Map();
  for (const [file, text] of files) {
    const edges = new Map<string, EdgeKind>();
    for (const { to, kind } of importsOf(file, text)) if (edges.get(to) !== 'static') edges.set(to, kind);
    graph.set(file, edges);
  }
  return graph;
}

/** Every .ts file under `dir` (relative to `root`), with its text. */
export function readSources(root: string, dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (sub: string) => {
    for (const entry of readdirSync(join(root, sub), { withFileTypes: true })) {
      const path = join(sub, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.set(relative(root, join(root, path)), readFileSync(join(root, path), 'utf8'));
    }
  };
  walk(dir);
  return files;
}

/** The same graph with its nodes merged by `group` (a file → its folder); edges inside a group vanish. */
export function groupGraph(graph: Graph, group: (file: string) => string | undefined): Graph {
  const grouped: Graph = new Map();
  for (const [from, edges] of graph) {
    const a = group(from);
    if (a === undefined) continue;
    const out = grouped.get(a) ?? new Map<string, EdgeKind>();
    grouped.set(a, out);
    for (const [to, kind] of edges) {
      const b = group(to);
      if (b === undefined || b === a) continue;
      if (out.get(b) !== 'static') out.set(b, kind);
    }
  }
  return grouped;
}

/** Strongly connected components with more than one node (Tarjan), each sorted. */
export function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** The shortest loop from `start` back to itself inside `component` (breadth first). */
function shortestLoop(graph: Graph, component: Set<string>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

/**
 * One line per cycle: the loop with each arrow's kind, and the node to move. The node named is the
 * one whose removal leaves the fewest nodes of the cycle still in a loop (the most imported on a tie):
 * the file whose shared part belongs in a module below the others, or whose caller should do its work.
 */
export function describeCycles(graph: Graph): string[] {
  return cycles(graph).map((component) => {
    const members = new Set(component);
    const remaining = (without: string) => {
      const sub: Graph = new Map();
      for (const v of component) {
        if (v === without) continue;
        sub.set(v, new Map([...(graph.get(v) ?? [])].filter(([w]) => members.has(w) && w !== without)));
      }
      return cycles(sub).flat().length;
    };
    const importers = (v: string) => component.filter((u) => graph.get(u)?.has(v)).length;
    const move = [...component].sort((a, b) => remaining(a) - remaining(b) || importers(b) - importers(a) || a.localeCompare(b))[0]!;
    const loop = shortestLoop(graph, members, move);
    const arrows = loop
      .slice(1)
      .map((to, i) => `${graph.get(loop[i]!)!.get(to) === 'dynamic' ? ' ⇢ import() ' : ' → '}${to}`)
      .join('');
    const more = component.length > loop.length - 1 ? ` (the cycle holds ${component.join(', ')})` : '';
    return `${loop[0]}${arrows}${more}: move what the others need out of ${move}, or have its caller do the part that imports back`;
  });
}
