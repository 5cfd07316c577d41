// The languages the speech recogniser (Whisper) knows, by its own codes, and how a BCP 47 tag of a
// request maps to one. Checked at job creation, so a language the model cannot transcribe is a
// field violation, not a failed job.

/** The language codes of openai-whisper's tokenizer (whisper/tokenizer.py, LANGUAGES), in its order. */
export const WHISPER_LANGUAGES: ReadonlySet<string> = new Set([
  "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id", "hi", "fi", "vi",
  "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk",
  "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw",
  "gl", "mr", "pa", "si", "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo",
  "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue",
]);

/** BCP 47 primary subtags Whisper spells differently: deprecated ISO 639 codes, macrolanguage members, Javanese's old "jw". */
const WHISPER_ALIASES: Readonly<Record<string, string>> = { iw: "he", in: "id", ji: "yi", jv: "jw", nb: "no", fil: "tl", mo: "ro", cmn: "zh" };

/** Whisper's code for a BCP 47 tag (pt-BR → pt, nb → no, zh-yue → yue), or undefined when Whisper lacks the language. */
export function toWhisperLanguage(tag: string): string | undefined {
  const [primary = "", second] = tag.trim().toLowerCase().split(/[-_]/);
  if (primary === "zh" && second === "yue") return "yue"; // the extended-language form of Cantonese
  const code = WHISPER_ALIASES[primary] ?? primary;
  return WHISPER_LANGUAGES.has(code) ? code : undefined;
}
