// The strict XML reader SPEKE reads CPIX with: namespaces, entities and CDATA, and the documents it refuses.
import { describe, expect, it } from "vitest";
import { childElements, parseXml, textOf, XmlError, type XmlElement } from "./xml.js";

describe("the XML reader", () => {
  const el = (c: XmlElement | string | undefined) => {
    if (c === undefined || typeof c === "string") throw new Error("not an element");
    return c;
  };

  it("resolves prefixed and default namespaces, scoped to their element", () => {
    const doc = parseXml(
      `<a:root xmlns:a="urn:a" xmlns="urn:d"><child a:x="1" y="2"/><b:other xmlns:b="urn:b"><deep/></b:other><x:n xmlns:x="urn:a"/></a:root>`,
    );
    expect([doc.ns, doc.local, doc.name]).toEqual(["urn:a", "root", "a:root"]);
    const [child, other, renamed] = doc.children.map(el);
    expect([child!.ns, child!.local, child!.attributes.get("a:x"), child!.attributes.get("y")]).toEqual(["urn:d", "child", "1", "2"]);
    expect([other!.ns, el(other!.children[0]).ns]).toEqual(["urn:b", "urn:d"]);
    expect(childElements(doc, "urn:a", "n")).toEqual([renamed]);
    expect(parseXml(`<r xmlns="urn:x"><s xmlns=""/></r>`).children.map(el)[0]!.ns).toBe("");
    expect(parseXml(`<r xml:lang="en"/>`).attributes.get("xml:lang")).toBe("en");
  });

  it("decodes entities and CDATA, merges text, skips comments, PIs, a BOM and the declaration", () => {
    const doc = parseXml(
      `\ufeff<?xml version="1.0"?>\n<!-- c -->\n<r a="&lt;&#65;&#x42;&amp;&quot;&apos;&gt;" b='x\ty'>one &amp; <![CDATA[<two>]]><!-- skip --><?pi x?> three</r>\n<!-- after -->\n`,
    );
    expect(doc.attributes.get("a")).toBe(`<AB&"'>`);
    expect(doc.attributes.get("b")).toBe("x y");
    expect(doc.children).toEqual(["one & <two> three"]);
    expect(textOf(parseXml("<a>x<b>y<c>z</c></b></a>"))).toBe("xyz");
  });

  it("refuses what is not one well-formed document, saying where", () => {
    const bad: [string, string][] = [
      ["", "expected the root element at offset 0"],
      ["just text", "expected the root element at offset 0"],
      [`<!DOCTYPE r [<!ENTITY x "y">]><r/>`, "declarations (DOCTYPE) are not accepted at offset 0"],
      ["<r><!ENTITY x></r>", "declarations are not accepted inside elements"],
      ["<r>", "<r> is not closed"],
      ["<r></s>", "</s> closes <r>"],
      ["<r></r ", "expected '>'"],
      ["<r/><s/>", "content after the root element"],
      ["<r/>text", "content after the root element"],
      ["<r a=1/>", "expected a quoted attribute value"],
      ["<r a/>", "expected '='"],
      [`<r a="1"b="2"/>`, "expected whitespace before an attribute"],
      [`<r a="1" a="2"/>`, "attribute a repeated"],
      [`<r a="<"/>`, "'<' in an attribute value"],
      [`<r a="1/>`, "unterminated attribute value"],
      ["<p:r/>", "namespace prefix p is not declared"],
      [`<r p:a="1"/>`, "namespace prefix p is not declared"],
      [`<r xmlns:p=""/>`, "empty namespace for xmlns:p"],
      ["<r>&unknown;</r>", "unknown entity reference"],
      ["<r>&#0;</r>", "unknown entity reference"],
      ["<r>&#xD800;</r>", "unknown entity reference"],
      ["<r>&#x110000;</r>", "unknown entity reference"],
      ["<r>a & b</r>", "'&' outside an entity reference"],
      ["<r>]]></r>", "']]>' in text"],
      ["<r><!-- open</r>", "unterminated comment"],
      ["<r><![CDATA[x</r>", "unterminated CDATA section"],
      ["<r><?pi</r>", "unterminated processing instruction"],
      ["<1r/>", "expected a name"],
      [`<r a="1"`, "unterminated <r> at offset 8"],
      [`${"<a>".repeat(40)}${"</a>".repeat(40)}`, "elements nest deeper than 32"],
    ];
    for (const [text, message] of bad) {
      expect(() => parseXml(text), text).toThrow(XmlError);
      expect(() => parseXml(text), text).toThrow(message);
    }
    expect(() => parseXml(`${"<a>".repeat(32)}${"</a>".repeat(32)}`)).not.toThrow();
  });
});
