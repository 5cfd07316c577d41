// HDR static metadata: the SMPTE ST 2086 mastering display and the CTA-861.3 content light levels,
// read from x265's notation (a variant's hdr.master_display) for the output check and the encoder.

/** Chromaticities as CIE 1931 x, y; luminances in cd/m². */
export interface MasteringDisplay {
  red: [number, number];
  green: [number, number];
  blue: [number, number];
  whitePoint: [number, number];
  maxLuminance: number;
  minLuminance: number;
}

/** Maximum content light level and maximum frame-average light level, cd/m². */
export interface ContentLight {
  maxCll: number;
  maxFall: number;
}

/** CTA-861.3 light levels are 0 to 10000 cd/m² (PQ's peak). */
export const LIGHT_LEVEL_MAX = 10_000;

const X265_NOTATION = /^G\((\d+),(\d+)\)B\((\d+),(\d+)\)R\((\d+),(\d+)\)WP\((\d+),(\d+)\)L\((\d+),(\d+)\)$/;
/** x265's units: chromaticity in 0.00002, luminance in 0.0001 cd/m². */
export const CHROMA_UNIT = 50_000;
export const LUMINANCE_UNIT = 10_000;

/**
 * A mastering display in x265's notation, G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min), as values; a
 * string says what is wrong with it.
 */
export function parseMasterDisplay(text: string): MasteringDisplay | string {
  const m = X265_NOTATION.exec(text);
  if (!m)
    return "must be G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min) in x265's units (chromaticity x 50000, luminance x 10000 cd/m²), e.g. G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)";
  const n = m.slice(1).map(Number);
  if (n.slice(0, 8).some((c) => c > CHROMA_UNIT)) return "chromaticities are 0 to 50000 (x or y of CIE 1931 times 50000)";
  const [max, min] = [n[8]! / LUMINANCE_UNIT, n[9]! / LUMINANCE_UNIT];
  if (max < 1 || max > LIGHT_LEVEL_MAX) return "the maximum luminance L(max,…) is 1 to 10000 cd/m² (10000 to 100000000 in units of 0.0001)";
  if (min >= max) return "the minimum luminance L(…,min) must be below the maximum";
  const xy = (i: number): [number, number] => [n[i]! / CHROMA_UNIT, n[i + 1]! / CHROMA_UNIT];
  return { green: xy(0), blue: xy(2), red: xy(4), whitePoint: xy(6), maxLuminance: max, minLuminance: min };
}
