// Multi-topic talks for judging chapter detection (issue 27), and the judging: each talk spoken,
// transcribed and chaptered as an encode does it, its topic starts matched to chapter starts. TUNING is what the segmentation's
// parameters were chosen on. HELD_OUT was written before the tuning and never used to pick a
// parameter, only to report recall (its shortest talk, and two sentences per topic of its longest,
// were added during the tuning to span 30 s to 10 min, and were not segmented until it was done).
// Each talk is its topics in order, each topic its sentences; a topic starts where its first
// sentence is spoken. Plain words, no digits, for espeak-ng at 150 wpm (test/speech.ts).
import { performance } from "node:perf_hooks";
import type { Chapter } from "../encoder-node/captions.js";
import type { Recogniser } from "../encoder-node/recogniser.js";
import { chapterMinSeconds, chapterSentences, MAX_CHAPTERS } from "../encoder-node/subtitles.js";
import { synthesizeWav } from "./speech.js";

export interface TopicTalk {
  name: string;
  topics: readonly (readonly string[])[];
}

/** The talks the segmentation was tuned on (with test/speech.ts's TOPICS, the three-topic captions test). */
export const TUNING: readonly TopicTalk[] = [
  {
    name: "sharks, taxes, painting (about 35 s)",
    topics: [
      [
        "Sharks have lived in the oceans for longer than there have been trees on land.",
        "They find their prey by smell and by sensing the tiny electric signals of other fish.",
      ],
      [
        "Filing a tax return means telling the government what you earned during the year.",
        "Keep your receipts, because some costs can be taken off what you owe.",
      ],
      ["Before painting a room, cover the floor and tape the edges of the windows.", "Two thin coats of paint look better than one thick coat."],
    ],
  },
  {
    name: "rainforests, guitar, marathons, glass (about 72 s)",
    topics: [
      [
        "Tropical rainforests cover a small part of the land but hold more than half of its plants and animals.",
        "Tall trees form a thick roof of leaves that keeps the forest floor dark and damp.",
        "Frogs, monkeys and bright birds live high in the branches and rarely touch the ground.",
      ],
      [
        "Learning the guitar starts with a few simple chords and a lot of patience.",
        "At first the strings hurt your fingertips, but hard skin soon forms.",
        "Strumming slowly and evenly matters more than playing fast.",
      ],
      [
        "A marathon is a long race that takes most runners several hours to finish.",
        "Training builds up slowly over many months, with one long run every week.",
        "On race day, runners drink water often and try not to start too fast.",
      ],
      [
        "Glass can be recycled again and again without losing its quality.",
        "Old bottles are crushed, melted in a furnace and blown into new jars.",
        "Sorting glass by colour keeps the new glass clear.",
      ],
    ],
  },
  {
    name: "the heart, pyramids, pizza, thunderstorms, saving (about 155 s)",
    topics: [
      [
        "The human heart is a strong muscle about the size of a closed fist.",
        "It pumps blood through a huge network of arteries and veins without ever resting.",
        "Blood carries oxygen from the lungs to every part of the body and brings waste back.",
        "Regular exercise makes the heart stronger and helps it work with less effort.",
        "A doctor listens to the heart to hear whether its valves open and close properly.",
      ],
      [
        "The great pyramids of Egypt were built as tombs for powerful kings.",
        "Workers cut huge blocks of stone and dragged them across the desert on sledges.",
        "Inside, narrow passages lead to burial rooms that once held gold and treasure.",
        "Most of the treasure was stolen by robbers long before modern explorers arrived.",
        "Even today, experts argue about exactly how the heaviest stones were lifted into place.",
      ],
      [
        "A good pizza starts with a thin dough that has rested for a whole day.",
        "Spread a little tomato sauce over the base and leave the edges bare.",
        "Add fresh cheese, a few leaves of basil and a splash of olive oil.",
        "The oven should be as hot as it can get, so the crust blisters quickly.",
        "Slice the pizza as soon as it comes out and eat it while the cheese is soft.",
      ],
      [
        "Thunderstorms form when warm, wet air rises quickly into cold air above.",
        "Tall clouds build up and ice inside them collides and creates electric charge.",
        "Lightning is a giant spark that jumps between the cloud and the ground.",
        "Thunder is the sound of air heated so fast that it explodes outwards.",
        "If you are outside during a storm, stay away from tall trees and open fields.",
      ],
      [
        "Saving money gets easier when you decide how much to put aside before you spend anything.",
        "Many people move part of their wages into a separate account on payday.",
        "Small habits, like cooking at home and cancelling unused subscriptions, add up over a year.",
        "An emergency fund means a broken car or a lost job does not become a crisis.",
        "The earlier you start saving, the longer interest has to grow your money.",
      ],
    ],
  },
  {
    name: "penguins, printing, camping, earthquakes, chocolate, flight (about 210 s)",
    topics: [
      [
        "Penguins are birds that cannot fly, but they swim faster than most fish.",
        "Their wings have become stiff flippers that push them through cold water.",
        "Emperor penguins huddle together through the dark Antarctic winter to stay warm.",
        "The father keeps the egg on his feet for weeks while the mother hunts at sea.",
        "When the chick hatches, both parents take turns bringing it food.",
        "Thick layers of fat and tightly packed feathers keep the cold out.",
      ],
      [
        "Before the printing press, every book had to be copied slowly by hand.",
        "Johannes Gutenberg built a press that used small metal letters which could be arranged and reused.",
        "A page could now be printed hundreds of times in a single day.",
        "Books became cheaper, and many more people learned to read.",
        "News, ideas and arguments spread across Europe faster than ever before.",
        "Some historians call the printing press the most important invention of its age.",
      ],
      [
        "Camping in the wild starts with choosing a flat, dry place for the tent.",
        "Set up camp well before dark, so you can see what you are doing.",
        "Keep food sealed and away from the tent, because animals follow their noses.",
        "A small stove is safer and cleaner than an open fire.",
        "Bring layers of warm clothes, since nights outdoors get colder than you expect.",
        "When you leave, take all your rubbish with you and leave the place as you found it.",
      ],
      [
        "Earthquakes happen when huge plates of rock under the ground slip past each other.",
        "Stress builds up slowly for years and is then released in a few seconds of shaking.",
        "The point on the surface above the slip usually shakes the hardest.",
        "Buildings in danger zones are designed to sway rather than crack.",
        "Under the sea, a strong earthquake can push up a wave that crosses whole oceans.",
        "Nobody can yet predict the exact day an earthquake will strike.",
      ],
      [
        "Chocolate comes from the seeds of the cacao tree, which grows near the equator.",
        "Farmers split open the pods and leave the beans to ferment under banana leaves.",
        "The dried beans are roasted, cracked and ground into a thick brown paste.",
        "Sugar, milk and cocoa butter are mixed in to make the chocolate smooth and sweet.",
        "Dark chocolate has more cocoa and less sugar than milk chocolate.",
        "Melted chocolate must be cooled carefully so that it sets with a shiny snap.",
      ],
      [
        "An aeroplane flies because its wings push air downwards as it moves forward.",
        "The curved shape of the wing makes the air flow faster over the top.",
        "Engines provide the thrust that keeps the plane moving through the air.",
        "Pilots use flaps on the wings to fly slowly and safely during landing.",
        "At cruising height the air is thin, so the plane uses less fuel.",
        "Modern airliners carry hundreds of passengers across oceans every day.",
      ],
    ],
  },
  {
    name: "football, tennis, rice, cakes: neighbours that are alike (about 71 s)",
    topics: [
      [
        "Football is played by two teams of eleven players on a wide grass pitch.",
        "Only the goalkeeper may touch the ball with the hands inside the penalty area.",
        "A match lasts for two halves, and the team that scores more goals wins.",
      ],
      [
        "Tennis is played with rackets and a small yellow ball over a low net.",
        "A player wins a point when the other cannot return the ball inside the lines.",
        "Matches are divided into games and sets, and some last for hours.",
      ],
      [
        "Rice is cooked best by measuring the water rather than boiling it in a large pan.",
        "Rinse the grains first to wash away the loose starch that makes them sticky.",
        "Cover the pot and let it simmer gently until the water has gone.",
      ],
      [
        "Baking a cake means creaming butter and sugar until they turn pale and fluffy.",
        "Eggs are beaten in one at a time, and then the flour is folded in gently.",
        "Test the cake with a thin skewer, which should come out clean when it is done.",
      ],
    ],
  },
];

/** One topic throughout, from the tuning set: they must not be cut. */
export const TUNING_SINGLE: readonly TopicTalk[] = [
  {
    name: "training a dog (one topic, about 48 s)",
    topics: [
      [
        "Training a puppy works best with short lessons and plenty of praise.",
        "Start with simple commands like sit and stay, and reward the dog the moment it obeys.",
        "Dogs learn from repetition, so practise the same command several times each day.",
        "Never shout at a puppy that gets it wrong, because fear makes learning slower.",
        "Walking on a loose lead takes longer to teach, since the dog wants to pull towards every smell.",
        "Stop each time the lead goes tight and only walk on when the dog comes back to your side.",
        "A tired dog is a calm dog, so long walks make the lessons at home easier.",
      ],
    ],
  },
  {
    name: "a garden pond (one topic, about 91 s)",
    topics: [
      [
        "A small pond brings more wildlife into a garden than almost anything else you can build.",
        "Choose a spot that gets sunshine for part of the day but is not right under a tree, or falling leaves will rot in the water.",
        "Dig the hole with gently sloping sides and a shallow shelf around the edge.",
        "The shelf gives marsh plants somewhere to grow and lets frogs and hedgehogs climb out.",
        "Line the hole with old carpet or sand, then lay a flexible liner over it so that stones cannot pierce it.",
        "Fill the pond with rainwater if you can, because tap water feeds the green algae.",
        "Place a few oxygenating plants on the bottom and a water lily in the deepest part.",
        "Within weeks, water boatmen and pond skaters arrive on their own.",
        "Dragonflies lay eggs on the stems of the plants in the first summer.",
        "Frogs may take a year or two to find the pond, but once they spawn they return every spring.",
        "Avoid adding fish to a wildlife pond, since they eat the tadpoles and the young insects.",
        "In autumn, pull out some of the dead leaves and plants so the water stays clear.",
        "A pond needs very little work once it settles, and it changes with every season.",
      ],
    ],
  },
];

/** Held-out talks, shortest first; the last (about 10 min) is for the bench only, too slow to transcribe in the suite. */
export const HELD_OUT: readonly TopicTalk[] = [
  {
    name: "rainbows, passports, snails (about 34 s)",
    topics: [
      ["Rainbows appear when bright sunlight shines through drops of falling rain.", "Each tiny drop bends the light and spreads it into a band of colours."],
      ["To travel abroad, you usually need a passport with a recent photograph of your face.", "Apply well before your trip, because the office can be slow."],
      [
        "Garden snails carry their spiral shells on their backs wherever they go.",
        "They come out after rain and eat young leaves and flowers during the night.",
      ],
    ],
  },
  {
    name: "bees, chess, a dripping tap (about 44 s)",
    topics: [
      [
        "Honeybees live in large colonies ruled by a single queen.",
        "Worker bees gather nectar from flowers and turn it into honey inside the hive.",
        "They dance to tell each other where the best flowers grow.",
      ],
      [
        "Chess is played on a board of light and dark squares.",
        "Each player moves one piece at a time and tries to trap the other king.",
        "Good players plan many moves ahead.",
      ],
      [
        "A dripping tap usually means the rubber washer inside has worn out.",
        "Turn off the water under the sink before you take the tap apart.",
        "A new washer costs very little and stops the leak.",
      ],
    ],
  },
  {
    name: "glaciers, knitting, elections, owls (about 86 s)",
    topics: [
      [
        "Glaciers are rivers of ice that move slowly down mountain valleys.",
        "As they creep forward, they grind the rock beneath them into fine dust.",
        "Many glaciers around the world are shrinking as summers grow warmer.",
        "When a glacier melts away, it leaves behind lakes, loose stones and wide valleys.",
      ],
      [
        "Knitting turns a single strand of yarn into cloth using two long needles.",
        "Beginners usually start with a simple scarf made from thick wool.",
        "Each row of loops is pulled through the row before it.",
        "With practice, knitters learn to make patterns, sweaters and warm socks.",
      ],
      [
        "In many countries, citizens choose their leaders by voting in elections.",
        "Voters mark a paper ballot in private and drop it into a sealed box.",
        "Volunteers count the ballots by hand once the polls close.",
        "The candidate with the most votes usually wins the seat.",
      ],
      [
        "Owls hunt at night with sharp eyes and almost silent wings.",
        "Their soft feathers muffle the sound of flight, so mice never hear them coming.",
        "An owl can turn its head much further than a person can.",
        "After a meal, it coughs up small pellets of bone and fur.",
      ],
    ],
  },
  {
    name: "lighthouses, cheese, sleep, railways, compost (about 142 s)",
    topics: [
      [
        "Lighthouses have guided sailors along dangerous coasts for centuries.",
        "A powerful lamp at the top sends a beam of light far out over the water.",
        "Each lighthouse flashes in its own pattern, so sailors can tell which one they are looking at.",
        "In the past, keepers lived in the tower and climbed the stairs every evening to light the lamp.",
        "Today most lights are automatic.",
      ],
      [
        "Cheese is made by curdling milk and pressing the solid curds together.",
        "The cheesemaker warms the milk and adds a little rennet to thicken it.",
        "The curds are cut, drained and packed into round moulds.",
        "Some cheeses are eaten fresh within days, while others rest in cool cellars for months.",
        "During that time, their flavour grows stronger and their rind grows hard.",
      ],
      [
        "Sleep gives the body and the brain time to recover from the day.",
        "During deep sleep, the body repairs muscles and the brain sorts through memories.",
        "Most adults feel best after a full night of rest.",
        "Bright screens late in the evening can make it harder to fall asleep.",
        "Going to bed at the same time every night helps keep a steady rhythm.",
      ],
      [
        "The first railways carried coal from mines to nearby rivers and ports.",
        "Steam engines soon pulled passengers between growing cities.",
        "Railways changed how people lived, because a journey that once took a week could now be done in a day.",
        "Towns grew up around stations, and clocks across whole countries were set to the same time so that trains could keep their schedules.",
      ],
      [
        "Composting turns kitchen scraps and garden waste into rich soil.",
        "Fruit peels, coffee grounds and dry leaves can all go into the heap.",
        "Worms and tiny microbes break the waste down over a few months.",
        "Turning the pile with a fork lets air in and speeds things up.",
        "The dark, crumbly compost that results feeds plants better than most shop fertilisers.",
      ],
    ],
  },
  {
    name: "the moon, learning a language, a bicycle (about 167 s)",
    topics: [
      [
        "The moon is the only natural satellite of the earth, and the brightest object in the night sky after the sun.",
        "It does not make its own light; what we see is sunlight bouncing off its grey, dusty surface.",
        "As the moon travels around the earth, we see more or less of its lit side, which is why it seems to change shape.",
        "Its gravity pulls on the oceans and raises the tides that flood and drain the beaches twice a day.",
        "The dark patches on its face are wide plains of old lava, and the bright areas are mountains covered in craters.",
        "Astronauts walked on the moon more than half a century ago and brought back bags of rock and dust.",
        "Because there is no wind or rain there, their footprints are probably still as sharp as the day they were made.",
      ],
      [
        "Learning a new language as an adult is slow at first, but it is never too late to start.",
        "The most useful thing is to hear the language every day, even if you only understand a little.",
        "Films, songs and radio shows teach the rhythm of speech better than lists of grammar rules.",
        "Speaking is frightening for many learners, because they are afraid of making mistakes in front of others.",
        "Yet native speakers are usually patient and pleased that someone is trying to learn their language.",
        "Writing a short diary in the new language helps new words move from memory into habit.",
        "After a few months, there comes a happy moment when you realise you are thinking in the new language without translating.",
      ],
      [
        "A bicycle that is looked after will run smoothly and safely for many years.",
        "The chain needs a few drops of oil every few weeks, and any extra oil should be wiped off so that dirt does not stick to it.",
        "Tyres lose air slowly, so check them with your thumb before every ride and pump them up when they feel soft.",
        "Brakes wear down with use; if you have to squeeze the levers right to the handlebars, the pads need replacing.",
        "A loose saddle or handlebar is dangerous, so tighten the bolts whenever something starts to wobble.",
        "Washing the frame after a muddy ride stops rust from forming on the metal parts.",
        "Once a year, a visit to a bike shop will catch the problems that are hard to spot at home.",
      ],
    ],
  },
  {
    name: "coral reefs, jazz, the immune system, castles, photography, tomatoes (about 605 s)",
    topics: [
      [
        "Coral reefs look like colourful rocks, but they are built by tiny animals called polyps.",
        "Each polyp is smaller than a grain of rice and lives inside a hard cup of limestone that it makes itself.",
        "Over thousands of years, millions of these cups pile up into reefs large enough to be seen from space.",
        "Most reef building corals live in warm, shallow and very clear water, because they depend on sunlight.",
        "Inside their soft bodies live tiny plants that turn sunlight into food and share it with the coral.",
        "These plants also give the coral its bright colours of pink, green, purple and gold.",
        "When the sea becomes too warm, the coral pushes the plants out and turns pale white.",
        "This is called bleaching, and if the water does not cool down soon, the coral starves and dies.",
        "A healthy reef is one of the busiest places on the planet, crowded with fish, crabs, turtles and sharks.",
        "Reefs also protect coasts, because they break the force of waves before they reach the shore.",
        "Fishing with nets that drag along the bottom, and mud washed from farms into the sea, both damage reefs.",
        "Some divers now grow small pieces of coral in underwater nurseries and plant them back on broken reefs.",
        "Protecting reefs helps the fishing villages and the tourist towns that depend on them.",
        "Scientists also study how some corals survive in warmer water, hoping to breed tougher reefs.",
        "Even visitors can help by using sun cream that does not harm the coral.",
      ],
      [
        "Jazz was born in the city of New Orleans, where many musical traditions met and mixed.",
        "African rhythms, church songs, marching bands and the blues all flowed into the new sound.",
        "Early jazz bands played in dance halls, on riverboats and at street parades.",
        "What made jazz different was improvisation, the art of making up a melody on the spot.",
        "A trumpet player might take a familiar tune and twist it into something nobody had heard before.",
        "The other musicians listened closely and answered with their own ideas, like a conversation.",
        "Louis Armstrong became famous for his warm trumpet playing and his rough, friendly singing voice.",
        "Later, big bands with many horns played swing music that filled the ballrooms of the time.",
        "After the war, smaller groups played bebop, which was faster and harder to dance to.",
        "Jazz musicians were often treated unfairly, yet their music spread around the whole world.",
        "Today you can hear jazz in small clubs, at huge festivals, and in the music of films and advertisements.",
        "Many jazz players say the best way to learn is to listen to the old records again and again.",
        "The saxophone, the piano and the double bass became the heart of many small jazz groups.",
        "Some famous solos have been copied note by note by students for generations.",
      ],
      [
        "The immune system is the body's defence against germs such as bacteria and viruses.",
        "Its first line of defence is the skin, which keeps most invaders out.",
        "Inside the nose and throat, sticky mucus traps dust and germs before they reach the lungs.",
        "When germs do get in, white blood cells rush to the spot and try to swallow them.",
        "This is why a cut becomes red, warm and swollen while it heals.",
        "Some white blood cells make antibodies, small proteins that fit onto one particular germ like a key in a lock.",
        "Once the body has made antibodies against a germ, it remembers how to make them again.",
        "That memory is why people rarely catch some illnesses twice.",
        "Vaccines use this memory by showing the body a harmless piece of a germ, so it is ready for the real thing.",
        "A fever is not a mistake, because many germs grow more slowly when the body is warmer.",
        "Sometimes the immune system attacks harmless things, like pollen or peanuts, and causes an allergy.",
        "Sleep, good food and exercise all help keep the body's defences strong.",
        "Washing your hands with soap is one of the simplest ways to stop germs from spreading.",
        "Doctors can measure antibodies in a blood test to see which illnesses a person has already met.",
      ],
      [
        "Medieval castles were built to protect their lords and to show off their power.",
        "The earliest castles were simple wooden towers standing on a hill of earth, surrounded by a fence.",
        "Wood burns easily, so builders soon began to use stone instead.",
        "A stone castle had thick walls, narrow windows for archers, and a strong central tower called the keep.",
        "Many castles were surrounded by a moat, a wide ditch filled with water that kept attackers away from the walls.",
        "The only way in was across a drawbridge, which could be raised when enemies appeared.",
        "Behind the gate, a heavy iron grille could drop down to block the entrance.",
        "Life inside a castle was crowded, cold and smoky, with servants, soldiers and animals living close together.",
        "During a siege, the attackers tried to starve the people inside or knock down the walls with huge stones.",
        "Defenders poured hot sand and rocks on anyone who tried to climb the walls.",
        "When cannons became powerful enough to smash stone, castles slowly lost their purpose.",
        "Many now stand as ruins, visited by tourists who walk the walls where guards once kept watch.",
        "Some castles had secret tunnels so that messengers could slip out during a siege.",
        "Great halls inside were used for feasts, where the lord sat at a high table above everyone else.",
      ],
      [
        "Photography means drawing with light, and a camera is really just a dark box with a small opening.",
        "Light passes through the lens and forms an image on the sensor at the back of the camera.",
        "The first photographs needed people to sit completely still for minutes at a time.",
        "That is why faces in very old pictures often look serious, because holding a smile for so long is hard.",
        "Later, rolls of film made it possible to take many pictures quickly and develop them in a darkroom.",
        "Today most photographs are taken with phones, and they appear on the screen at once.",
        "A good photograph depends less on the camera than on the eye of the person holding it.",
        "Photographers often place the main subject a little away from the centre of the frame.",
        "Soft light in the early morning or late evening makes people and landscapes look warmer.",
        "Harsh midday sun casts deep shadows under the eyes and makes colours look flat.",
        "Getting closer to the subject usually improves a picture more than any expensive lens.",
        "Many photographers take dozens of shots of the same scene and keep only the best one.",
        "Editing software can brighten a dark picture or remove a stranger from the background.",
        "Yet many people still enjoy printing their favourite photographs and keeping them in albums.",
      ],
      [
        "Tomatoes are one of the easiest vegetables to grow in a garden or in a pot on a sunny balcony.",
        "Strictly speaking they are fruits, because they carry their seeds inside.",
        "Seeds are sown indoors in early spring and kept warm until small green shoots appear.",
        "When the danger of frost has passed, the young plants can move outside into rich soil.",
        "Tomatoes love sunshine and need at least a full morning of direct light every day.",
        "Tall kinds need a strong stick or a cage to hold them up as they grow heavy with fruit.",
        "Water them deeply at the roots rather than splashing the leaves, which can spread disease.",
        "Pinching out the small side shoots helps the plant put its energy into the fruit.",
        "Yellow flowers appear first, and each one can become a tomato if a bee or the wind shakes its pollen loose.",
        "The green fruits slowly turn red, orange, yellow or even purple, depending on the variety.",
        "A tomato picked warm from the plant tastes sweeter than almost any bought in a shop.",
        "At the end of the season, green tomatoes that will not ripen can be made into a tangy chutney.",
        "Some gardeners save seeds from their best tomatoes to sow again the next spring.",
        "Cherry tomatoes ripen earliest and are perfect for children to pick straight from the plant.",
      ],
    ],
  },
];

/** One topic throughout, held out like HELD_OUT: it must not be cut. */
export const HELD_OUT_SINGLE: readonly TopicTalk[] = [
  {
    name: "making tea (one topic, about 26 s)",
    topics: [
      [
        "A good cup of tea starts with fresh cold water brought just to the boil.",
        "Warm the pot first, so the water does not cool down when it touches the leaves.",
        "Black tea needs boiling water and about four minutes to brew, while green tea prefers water that has cooled a little.",
        "Pour the tea through a strainer, and add milk or lemon if you like.",
      ],
    ],
  },
  {
    name: "making paper (one topic, about 76 s)",
    topics: [
      [
        "Paper was first made in China, from the bark of mulberry trees, old rags and fishing nets.",
        "The fibres were soaked in water and beaten until they came apart into a soft pulp.",
        "A paper maker dipped a fine screen into the tub of pulp and lifted it out level.",
        "As the water drained through the screen, a thin mat of tangled fibres was left on top.",
        "The wet sheet was pressed between pieces of felt to squeeze out more water and then hung up to dry.",
        "For centuries, paper in Europe was made from linen rags collected from homes and towns.",
        "When rags ran short, paper makers learned to make pulp from wood instead.",
        "Modern paper mills turn logs into pulp with machines and chemicals, and roll out sheets many metres wide.",
        "Bleach makes the paper white, and a thin coating of clay makes it smooth enough for printing photographs.",
        "Old paper can be soaked and pulped again, so most newspapers and boxes are made partly from recycled sheets.",
      ],
    ],
  },
];

/** A chapter start this close to a topic start finds it. */
export const MATCH_SECONDS = 1.5;

export interface ChapteredTalk {
  talk: TopicTalk;
  /** Where each topic starts in the audio, the first at 0. */
  topicStarts: number[];
  durationSeconds: number;
  minSeconds: number;
  chapters: Chapter[];
  transcribeSeconds: number;
}

/** The talk synthesised into dir, transcribed in English, and chaptered as an encode does (subtitles.ts). */
export async function chapterTalk(recogniser: Recogniser, dir: string, talk: TopicTalk): Promise<ChapteredTalk> {
  const speech = await synthesizeWav(dir, talk.topics);
  const began = performance.now();
  const transcript = await recogniser.transcribe(speech.wav, "en", {});
  const transcribeSeconds = (performance.now() - began) / 1000;
  const minSeconds = chapterMinSeconds(transcript.durationSeconds);
  const chapters = await recogniser.chapters(chapterSentences(transcript.segments), minSeconds, MAX_CHAPTERS);
  return { talk, topicStarts: speech.topicStarts, durationSeconds: transcript.durationSeconds, minSeconds, chapters, transcribeSeconds };
}

/** For each topic start after the first, how far the nearest chapter start after the first is (Infinity: no chapter after the first). */
export function topicStartErrors(t: ChapteredTalk): number[] {
  const starts = t.chapters.slice(1).map((c) => c.start);
  return t.topicStarts.slice(1).map((topic) => Math.min(Infinity, ...starts.map((s) => Math.abs(s - topic))));
}

/** Chapter starts after the first that are not within MATCH_SECONDS of a topic start. */
export const extraChapters = (t: ChapteredTalk): number =>
  t.chapters.slice(1).filter((c) => !t.topicStarts.slice(1).some((topic) => Math.abs(c.start - topic) <= MATCH_SECONDS)).length;

/** Chapters shorter than the talk's minimum, which binds only when there is more than one (times are to the millisecond). */
export const shortChapters = (t: ChapteredTalk): Chapter[] => (t.chapters.length > 1 ? t.chapters.filter((c) => c.end - c.start < t.minSeconds - 0.001) : []);

/** One line on a chaptered talk: its topic-start errors, extra chapters, and the transcription's wall time. */
export function describeTalk(t: ChapteredTalk): string {
  const errors = topicStartErrors(t).map((e) => (Number.isFinite(e) ? e.toFixed(2) : "none"));
  return `${t.talk.name}: ${t.durationSeconds.toFixed(1)} s, min chapter ${t.minSeconds.toFixed(1)} s, ${t.chapters.length} chapter${t.chapters.length === 1 ? "" : "s"}, topic-start errors [${errors.join(", ")}] s, ${extraChapters(t)} extra, transcribed in ${t.transcribeSeconds.toFixed(1)} s`;
}
