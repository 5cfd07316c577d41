// @ts-check
// Local ESLint rule: no import cycles among the project's own files, type-only imports included.
//
// Why it exists: import-x/no-cycle skips type-only imports (`import type`, and `import { type A }`
// when every name is a type), so a loop made of them passes lint. Such a loop still ties the
// modules together: none of them can be read, moved or split without the others, and the layers
// stop pointing one way. This rule follows every static edge, so it catches those loops too.
//
// Edges it follows (relative specifiers only; `./x.js` resolves to `./x.ts`):
//   import ... from, import type ... from, import "./x.js", export * from, export { } from,
//   export type { } from, import x = require(), and type-position `import("./x.js").T`.
// Edges it does not follow: runtime `import()` expressions (they are how a load-time cycle is
// broken on purpose), bare specifiers (packages), and files under `ignores` or outside `root`.
//
// How it works: each file's import specifiers are taken once from its TypeScript syntax tree
// (typed linting's program already has it; otherwise the file is read and parsed here), cached by
// path, mtime and size. Tarjan's algorithm finds the strongly connected components of the graph
// reachable from the linted files, once per run (the results are kept and extended as more files
// are linted). A linted file that sits in a cycle gets one error, on its first import that leads
// back into the cycle, naming a shortest loop through that import (and, when more files are tied
// together, the whole group). Files count as saved: in an editor, unsaved edits elsewhere count
// once saved.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

/** @typedef {{ mtimeMs: number, size: number, targets: string[] }} FileEntry Resolved relative imports of one file on disk. */
/** @typedef {{ root: string, ignores: RegExp[], edges: Map<string, string[]>, index: Map<string, number>, low: Map<string, number>, onStack: Set<string>, stack: string[], sccOf: Map<string, Set<string>>, counter: number }} Analysis */
/** @typedef {{ value?: unknown }} LiteralLike */
/** @typedef {{ range?: [number, number], loc?: import("estree").SourceLocation | null }} Located */

/** Files read so far (absolute path -> entry; null when unreadable). Shared by every run in this process. */
/** @type {Map<string, FileEntry | null>} */
const files = new Map();
/** One analysis per (root, ignores) option set. */
/** @type {Map<string, Analysis>} */
const analyses = new Map();
/** When the cached files were last compared with the disk (ms since epoch). */
let checkedAt = Date.now();
/** Re-stat the cached files at most this often, so a long-lived process (an editor) sees edits. */
const RECHECK_MS = 1000;

/**
 * A glob as ESLint's flat config writes it (relative to the root; `**`, `*`, `?`) as a regular expression.
 * @param {string} glob
 */
function globToRegExp(glob) {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === "*" && glob[i + 1] === "*") {
      i++;
      if (glob[i + 1] === "/") {
        i++;
        re += "(?:.*/)?";
      } else {
        re += ".*";
      }
    } else if (c === "*") {
      re += "[^/]*";
    } else if (c === "?") {
      re += "[^/]";
    } else {
      re += c.replace(/[\\^$.|+()[\]{}]/g, "\\$&");
    }
  }
  return new RegExp(`^${re}$`);
}

/**
 * @param {string} file
 * @returns {ts.ScriptKind}
 */
function scriptKind(file) {
  if (file.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (/\.[cm]?ts$/.test(file)) return ts.ScriptKind.TS;
  if (file.endsWith(".jsx")) return ts.ScriptKind.JSX;
  return ts.ScriptKind.JS;
}

/** @param {string} spec */
const isRelative = (spec) => spec === "." || spec === ".." || spec.startsWith("./") || spec.startsWith("../");

/** @param {string} p */
function isFile(p) {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The file a relative specifier names, or null (a package, or no such file).
 * NodeNext style: `./x.js` is `./x.ts` (or `./x.tsx`, or a real `./x.js`); `.mjs`/`.cjs` likewise.
 * @param {string} fromFile
 * @param {string} spec
 */
function resolve(fromFile, spec) {
  if (!isRelative(spec)) return null;
  const full = path.resolve(path.dirname(fromFile), spec);
  /** @type {string[]} */
  let candidates;
  const ext = /\.[cm]?jsx?$/.exec(full)?.[0];
  if (ext) {
    const base = full.slice(0, -ext.length);
    const tsExt = ext.replace("js", "ts");
    candidates = [base + tsExt, ...(ext === ".js" ? [`${base}.tsx`] : []), full];
  } else {
    candidates = [full, `${full}.ts`, `${full}.tsx`, path.join(full, "index.ts")];
  }
  return candidates.find(isFile) ?? null;
}

/**
 * The specifiers of a file's static imports and re-exports, in source order. Runtime `import()` is left out.
 * @param {ts.SourceFile} source
 */
function specifiers(source) {
  const text = source.text;
  /** @type {{ pos: number, spec: string }[]} */
  const found = [];
  for (const s of source.statements) {
    if ((ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      found.push({ pos: s.pos, spec: s.moduleSpecifier.text });
    } else if (ts.isImportEqualsDeclaration(s) && ts.isExternalModuleReference(s.moduleReference) && ts.isStringLiteral(s.moduleReference.expression)) {
      found.push({ pos: s.pos, spec: s.moduleReference.expression.text });
    }
  }
  // Type-position imports, `import("./x.js").T` / `typeof import("./x.js")`, can sit anywhere in a type.
  if (/\bimport\s*\(/.test(text)) {
    /** @param {ts.Node} node */
    const walk = (node) => {
      if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        found.push({ pos: node.pos, spec: node.argument.literal.text });
      }
      ts.forEachChild(node, walk);
    };
    walk(source);
    found.sort((a, b) => a.pos - b.pos);
  }
  return found.map((f) => f.spec);
}

/**
 * The TypeScript program typed linting (typescript-eslint's project service) built for the file being
 * linted, if any. It holds every project file already parsed, so taking their imports from it saves
 * parsing them again; files it lacks are read from disk and parsed here.
 * @type {ts.Program | undefined}
 */
let program;

/**
 * A file's resolved relative imports (deduplicated, in source order), through the cache.
 * @param {string} file
 * @returns {FileEntry | null}
 */
function readEntry(file) {
  if (files.has(file)) return files.get(file) ?? null;
  /** @type {FileEntry | null} */
  let entry = null;
  try {
    const st = fs.statSync(file);
    const source = program?.getSourceFile(file) ?? ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, scriptKind(file));
    /** @type {string[]} */
    const targets = [];
    for (const spec of specifiers(source)) {
      const target = resolve(file, spec);
      if (target && !targets.includes(target)) targets.push(target);
    }
    entry = { mtimeMs: st.mtimeMs, size: st.size, targets };
  } catch {
    entry = null;
  }
  files.set(file, entry);
  return entry;
}

/** Drop cached files that changed on disk; if any did, the cycle analysis starts again. */
function recheck() {
  const now = Date.now();
  if (now - checkedAt < RECHECK_MS) return;
  checkedAt = now;
  let changed = false;
  for (const [file, entry] of files) {
    /** @type {fs.Stats | undefined} */
    let st;
    try {
      st = fs.statSync(file);
    } catch {
      st = undefined;
    }
    if (entry === null ? st !== undefined : st === undefined || st.mtimeMs !== entry.mtimeMs || st.size !== entry.size) {
      changed = true;
      break;
    }
  }
  // A new or deleted file can change what an unchanged import resolves to, so start clean.
  if (changed) {
    files.clear();
    analyses.clear();
  }
}

/**
 * @param {string} root
 * @param {string[]} ignores
 * @returns {Analysis}
 */
function analysisFor(root, ignores) {
  const key = JSON.stringify([root, ignores]);
  let a = analyses.get(key);
  if (!a) {
    a = {
      root,
      ignores: ignores.map(globToRegExp),
      edges: new Map(),
      index: new Map(),
      low: new Map(),
      onStack: new Set(),
      stack: [],
      sccOf: new Map(),
      counter: 0,
    };
    analyses.set(key, a);
  }
  return a;
}

/**
 * @param {Analysis} a
 * @param {string} file
 */
function isIgnored(a, file) {
  const rel = path.relative(a.root, file);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return true;
  const posix = rel.split(path.sep).join("/");
  if (posix.split("/").includes("node_modules")) return true;
  return a.ignores.some((re) => re.test(posix));
}

/**
 * The file's edges inside the analysed graph (ignored targets dropped).
 * @param {Analysis} a
 * @param {string} file
 */
function edgesOf(a, file) {
  let out = a.edges.get(file);
  if (!out) {
    out = (readEntry(file)?.targets ?? []).filter((t) => !isIgnored(a, t));
    a.edges.set(file, out);
  }
  return out;
}

/**
 * Tarjan's strongly connected components, iteratively, from `start`. Files already placed in a
 * component are final (everything they reach was explored with them), so later calls extend the
 * analysis without redoing it.
 * @param {Analysis} a
 * @param {string} start
 */
function explore(a, start) {
  if (a.index.has(start)) return;
  /** @type {{ v: string, targets: string[], i: number }[]} */
  const work = [];
  /** @param {string} v */
  const enter = (v) => {
    a.index.set(v, a.counter);
    a.low.set(v, a.counter);
    a.counter++;
    a.stack.push(v);
    a.onStack.add(v);
    work.push({ v, targets: edgesOf(a, v), i: 0 });
  };
  enter(start);
  while (work.length > 0) {
    const frame = /** @type {{ v: string, targets: string[], i: number }} */ (work[work.length - 1]);
    const { v } = frame;
    if (frame.i < frame.targets.length) {
      const w = /** @type {string} */ (frame.targets[frame.i++]);
      if (!a.index.has(w)) {
        enter(w);
      } else if (a.onStack.has(w)) {
        a.low.set(v, Math.min(/** @type {number} */ (a.low.get(v)), /** @type {number} */ (a.index.get(w))));
      }
      continue;
    }
    work.pop();
    const lowV = /** @type {number} */ (a.low.get(v));
    if (lowV === a.index.get(v)) {
      /** @type {Set<string>} */
      const scc = new Set();
      let w;
      do {
        w = /** @type {string} */ (a.stack.pop());
        a.onStack.delete(w);
        scc.add(w);
      } while (w !== v);
      for (const m of scc) a.sccOf.set(m, scc);
    }
    const parent = work[work.length - 1];
    if (parent) a.low.set(parent.v, Math.min(/** @type {number} */ (a.low.get(parent.v)), lowV));
  }
}

/**
 * A shortest path from `from` to `to` that stays inside `scc` (both ends included).
 * @param {Analysis} a
 * @param {Set<string>} scc
 * @param {string} from
 * @param {string} to
 */
function shortestPath(a, scc, from, to) {
  if (from === to) return [from];
  /** @type {Map<string, string>} */
  const prev = new Map();
  const queue = [from];
  const seen = new Set([from]);
  for (let i = 0; i < queue.length; i++) {
    const v = /** @type {string} */ (queue[i]);
    for (const w of edgesOf(a, v)) {
      if (!scc.has(w) || seen.has(w)) continue;
      seen.add(w);
      prev.set(w, v);
      if (w === to) {
        const out = [to];
        for (let p = prev.get(to); p !== undefined; p = prev.get(p)) out.unshift(p);
        return out;
      }
      queue.push(w);
    }
  }
  return null;
}

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "Disallow import cycles among the project's files, type-only imports and re-exports included" },
    schema: [
      {
        type: "object",
        properties: {
          root: { type: "string", description: "Project root: messages name files relative to it; files outside it are not followed" },
          ignores: { type: "array", items: { type: "string" }, description: "Globs relative to root whose files are not followed (pass the config's ignores)" },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      cycle: "import cycle (type imports included): {{loop}}",
      cycleInGroup: "import cycle (type imports included): {{loop}} (one loop among {{count}} files tied together: {{group}})",
    },
  },
  create(context) {
    /** @type {{ root?: string, ignores?: string[] }} */
    const options = context.options[0] ?? {};
    const root = path.resolve(options.root ?? context.cwd);
    const file = path.resolve(context.physicalFilename);
    /** @type {{ node: Located, spec: string }[]} */
    const imports = [];
    /**
     * @param {Located} node
     * @param {LiteralLike | null | undefined} literal
     */
    const add = (node, literal) => {
      if (typeof literal?.value === "string" && isRelative(literal.value)) imports.push({ node, spec: literal.value });
    };
    /** @param {{ source?: LiteralLike | null } & Located} node */
    const fromSource = (node) => add(node, node.source);

    return {
      ImportDeclaration: fromSource,
      ExportAllDeclaration: fromSource,
      ExportNamedDeclaration: fromSource,
      /** @param {{ moduleReference?: { type?: string, expression?: LiteralLike } } & Located} node */
      TSImportEqualsDeclaration(node) {
        if (node.moduleReference?.type === "TSExternalModuleReference") add(node, node.moduleReference.expression);
      },
      /** @param {{ source?: LiteralLike, argument?: { literal?: LiteralLike } } & Located} node */
      TSImportType(node) {
        add(node, node.source ?? node.argument?.literal);
      },
      "Program:exit"() {
        if (imports.length === 0 || !path.isAbsolute(context.physicalFilename) || !isFile(file)) return;
        recheck();
        /** @type {{ program?: unknown } | undefined} */
        const services = context.sourceCode.parserServices;
        program = /** @type {ts.Program | undefined} */ (
          typeof services?.program === "object" && services.program !== null && "getSourceFile" in services.program ? services.program : undefined
        );
        const a = analysisFor(root, options.ignores ?? []);
        if (isIgnored(a, file)) return;
        explore(a, file);
        const scc = a.sccOf.get(file);
        if (!scc || (scc.size === 1 && !edgesOf(a, file).includes(file))) return;
        const rel = (/** @type {string} */ f) => path.relative(root, f).split(path.sep).join("/");
        imports.sort((x, y) => (x.node.range?.[0] ?? 0) - (y.node.range?.[0] ?? 0));
        for (const { node, spec } of imports) {
          const target = resolve(file, spec);
          if (!target || !scc.has(target) || !node.loc) continue;
          const back = shortestPath(a, scc, target, file);
          if (!back) continue;
          const loop = [file, ...back].map(rel).join(" -> ");
          const rest = scc.size > back.length;
          const group = [...scc].map(rel).sort();
          context.report({
            loc: node.loc,
            messageId: rest ? "cycleInGroup" : "cycle",
            data: { loop, count: String(scc.size), group: group.join(", ") },
          });
          return;
        }
      },
    };
  },
};

export default rule;
