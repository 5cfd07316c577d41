// Readers the planner specs pin plans with, a line per thing: a plan's fields besides its commands,
// and its commands, the options every command starts with written once as <global>.
import { FFMPEG_GLOBAL, type OutputPlan } from "../plan.js";

const GLOBAL = FFMPEG_GLOBAL.join(" ");

export const commandsOf = (p: OutputPlan) => p.commands.map((c) => c.join(" ").replace(GLOBAL, "<global>"));

/** The plan without its commands (commandsOf), its folder and its output's id (the fixtures' own); renditions and master entries a line each. */
export function shapeOf(p: OutputPlan) {
  const { commands: _commands, dir: _dir, outputId: _outputId, renditions, hlsMaster, chunked, ...rest } = p;
  return {
    ...rest,
    ...(chunked ? { chunked: { rest: chunked.rest.map((r) => `${r.name} ${r.file}`), segmentSeconds: chunked.segmentSeconds } } : {}),
    ...(renditions ? { renditions: renditions.map((r) => `${r.name} ${r.codec} ${r.width}x${r.height}@${r.frameRate} ${r.file}`) } : {}),
    ...(hlsMaster
      ? {
          hlsMaster: [
            hlsMaster.file,
            ...hlsMaster.variants.map(
              (v) => `${v.playlist} ${v.width}x${v.height}@${v.frameRate} group=${v.audioGroup} range=${v.videoRange} iframes=${v.iframes?.playlist}`,
            ),
            ...hlsMaster.audio.map((a) => `${a.playlist} group=${a.groupId} "${a.name}" lang=${a.language} default=${a.isDefault} channels=${a.channels}`),
          ],
        }
      : {}),
  };
}
