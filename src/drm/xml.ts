// A small, strict XML reader for the CPIX documents SPEKE exchanges: one document, namespaces
// resolved, entities decoded, DOCTYPE refused; and the escape for text written into XML.
export const escapeXml = (text: string): string =>
  text.replace(/[<>&"']/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c] ?? c);

export class XmlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "XmlError";
  }
}

export interface XmlElement {
  /** Qualified name as written ("cpix:ContentKey"). */
  readonly name: string;
  /** Namespace URI the prefix resolves to; "" for none. */
  readonly ns: string;
  readonly local: string;
  /** As written, xmlns declarations included. */
  readonly attributes: ReadonlyMap<string, string>;
  /** Elements and text (entities decoded, CDATA merged in). */
  readonly children: readonly (XmlElement | string)[];
}

const XML_NS = "http://www.w3.org/XML/1998/namespace";
const NAME = /[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?/y;
const ENTITIES = new Map([
  ["lt", "<"],
  ["gt", ">"],
  ["amp", "&"],
  ["quot", '"'],
  ["apos", "'"],
]);
const MAX_DEPTH = 32;

function decodeEntities(raw: string): string {
  return raw.replace(/&([^&;]*)(;?)/g, (_, ref: string, semi: string) => {
    if (semi !== ";") throw new XmlError("'&' outside an entity reference");
    const named = ENTITIES.get(ref);
    if (named !== undefined) return named;
    const m = /^#(?:x([0-9a-fA-F]{1,6})|(\d{1,7}))$/.exec(ref);
    const code = m ? (m[1] !== undefined ? parseInt(m[1], 16) : Number(m[2])) : -1;
    if (code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) throw new XmlError("unknown entity reference");
    return String.fromCodePoint(code);
  });
}

interface Open {
  readonly el: XmlElement & { children: (XmlElement | string)[] };
  readonly scope: ReadonlyMap<string, string>;
  readonly selfClosing: boolean;
}

/** Parses one XML document: namespaces resolved; DOCTYPE (and so entity definitions) refused. */
export function parseXml(text: string): XmlElement {
  let at = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const fail = (what: string): never => {
    throw new XmlError(`${what} at offset ${at}`);
  };
  const ahead = (s: string) => text.startsWith(s, at);
  const skipSpace = () => {
    while (at < text.length && " \t\r\n".includes(text[at]!)) at++;
  };
  const until = (end: string, what: string): string => {
    const i = text.indexOf(end, at);
    if (i < 0) fail(`unterminated ${what}`);
    const s = text.slice(at, i);
    at = i + end.length;
    return s;
  };
  const name = (): string => {
    NAME.lastIndex = at;
    const m = NAME.exec(text) ?? fail("expected a name");
    at += m[0].length;
    return m[0];
  };
  /** Skips a comment or processing instruction at `at`; false when there is none. */
  const skipped = (): boolean => {
    if (ahead("<!--")) {
      at += 4;
      until("-->", "comment");
    } else if (ahead("<?")) {
      at += 2;
      until("?>", "processing instruction");
    } else return false;
    return true;
  };
  const misc = () => {
    for (skipSpace(); skipped();) skipSpace();
    if (ahead("<!")) fail("declarations (DOCTYPE) are not accepted");
  };
  const open = (parentScope: ReadonlyMap<string, string>): Open => {
    at++; // "<"
    const qname = name();
    const attributes = new Map<string, string>();
    for (;;) {
      const before = at;
      skipSpace();
      if (at >= text.length) fail(`unterminated <${qname}>`);
      if (ahead("/>") || ahead(">")) break;
      if (at === before) fail("expected whitespace before an attribute");
      const attr = name();
      skipSpace();
      if (text[at] !== "=") fail("expected '='");
      at++;
      skipSpace();
      const quote = text[at];
      if (quote !== '"' && quote !== "'") fail("expected a quoted attribute value");
      at++;
      const raw = until(quote!, "attribute value");
      if (raw.includes("<")) fail("'<' in an attribute value");
      if (attributes.has(attr)) fail(`attribute ${attr} repeated`);
      attributes.set(attr, decodeEntities(raw.replace(/[\t\n\r]/g, " ")));
    }
    const selfClosing = ahead("/>");
    at += selfClosing ? 2 : 1;
    const scope = new Map(parentScope);
    for (const [attr, value] of attributes) {
      if (attr === "xmlns") scope.set("", value);
      else if (attr.startsWith("xmlns:")) scope.set(attr.slice(6), value === "" ? fail(`empty namespace for ${attr}`) : value);
    }
    const prefixOf = (q: string) => (q.includes(":") ? q.slice(0, q.indexOf(":")) : "");
    for (const attr of attributes.keys()) {
      const p = prefixOf(attr);
      if (p !== "" && p !== "xmlns" && !scope.has(p)) fail(`namespace prefix ${p} is not declared`);
    }
    const prefix = prefixOf(qname);
    const ns = scope.get(prefix) ?? (prefix === "" ? "" : fail(`namespace prefix ${prefix} is not declared`));
    return { el: { name: qname, ns, local: qname.slice(qname.indexOf(":") + 1), attributes, children: [] }, scope, selfClosing };
  };
  const addText = (el: Open["el"], s: string) => {
    const last = el.children.length - 1;
    if (typeof el.children[last] === "string") el.children[last] += s;
    else if (s !== "") el.children.push(s);
  };

  misc();
  if (!ahead("<")) fail("expected the root element");
  const root = open(new Map([["xml", XML_NS]]));
  const stack = root.selfClosing ? [] : [root];
  for (let top = stack.at(-1); top; top = stack.at(-1)) {
    if (at >= text.length) fail(`<${top.el.name}> is not closed`);
    if (ahead("</")) {
      at += 2;
      const closing = name();
      skipSpace();
      if (text[at] !== ">") fail("expected '>'");
      if (closing !== top.el.name) fail(`</${closing}> closes <${top.el.name}>`);
      at++;
      stack.pop();
    } else if (skipped()) {
      // comment or processing instruction
    } else if (ahead("<![CDATA[")) {
      at += 9;
      addText(top.el, until("]]>", "CDATA section"));
    } else if (ahead("<!")) fail("declarations are not accepted inside elements");
    else if (ahead("<")) {
      if (stack.length >= MAX_DEPTH) fail(`elements nest deeper than ${MAX_DEPTH}`);
      const child = open(top.scope);
      top.el.children.push(child.el);
      if (!child.selfClosing) stack.push(child);
    } else {
      const end = text.indexOf("<", at);
      const raw = text.slice(at, end < 0 ? text.length : end);
      if (raw.includes("]]>")) fail("']]>' in text");
      at += raw.length;
      addText(top.el, decodeEntities(raw));
    }
  }
  misc();
  if (at < text.length) fail("content after the root element");
  return root.el;
}

/** Child elements of `parent` with this namespace and local name. */
export const childElements = (parent: XmlElement, ns: string, local: string): XmlElement[] =>
  parent.children.filter((c): c is XmlElement => typeof c !== "string" && c.ns === ns && c.local === local);

export const textOf = (el: XmlElement): string => el.children.map((c) => (typeof c === "string" ? c : textOf(c))).join("");
