// The faceless photos (no human face in any of them; each looked at): animals, plants, food, objects, vehicles,
// road signs, planets, flowers, buildings, landscapes, textures and abstract wallpapers, from Debian packages.
// scripts/setup/test-data.mjs fetches them into test/data/<id>/ with the other test photos, sha256-checked by
// test/data.manifest.json. Used by test/faceless-photos.test.ts and tools/rotated-recognition.ts: the face routes must
// find no face on any of them (issue 48).
//
// Left out on purpose: Tux Paint's people, cartoon, symbols, medical, military, sports, seasonal and house stamps
// (drawn faces, people, masks and jack-o'-lanterns) and its astronaut ("spacewalk"); the two larger copies of MATE's
// Elephants.

// Tux Paint's photo stamps (transparent PNGs; the decoder drops the alpha, as it does for any client's), by folder.
const TUX_PAINT = [
  ["animals/amphibians", "frog-1 frog"],
  ["animals/birds", "adelaide-rosella albino_peahen blackbird chicken_profile crow crowned_crane cuckoo drake duck gander guineafowl helmeted_guineafowl hen heron_greatblue heron_greatblue_flying lark little-penguin magellanic_penguin magpie nandou ostrich owl peacock pelican penguin pigeon pink_flamingo quetzal rainbow-lorikeet rooster seagull silver-gull tucan turkey vulture"],
  ["animals/fish", "bluegroper butterflyfish clownfish coraltrout dolphinfish lionfish lobster moonwrasse seahorse shrimp stripedfish"],
  ["animals/insects", "Brown_slug Woodlouse bee fly grasshopper hornet hoverfly mantis xanthia"],
  ["animals/lizards", "iguana"],
  ["animals/mammals/apes", "chimp gorilla tamarin_emperor"],
  ["animals/mammals/aquatic", "dolphin orca otter sea_lion whale"],
  ["animals/mammals", "badger echidna elephant ferret giraffe hedgehog hippopotamus pig pig_golden pig_golden2 rabbit_little rhino_black wildboar"],
  ["animals/mammals/bears", "bear european-bear"],
  ["animals/mammals/bears/toys", "edward_bear"],
  ["animals/mammals/bovines", "bison bull cow cow_white gnu-baby-stand gnu-baby gnu-sitting gnu-stand goat indian_blackbuck mountaingoat ram sheep sheep_lamb yak zebu"],
  ["animals/mammals/camel", "camel dromedary"],
  ["animals/mammals/cats", "lion-2 lion tiger tiger_sumatran"],
  ["animals/mammals/deer", "caribou deer doe wapiti"],
  ["animals/mammals/dogs", "dingo dog fox"],
  ["animals/mammals/equines", "donkey donkey_eating horse zebra"],
  ["animals/mammals/rodents", "beaver capybara marmot mouse rabbit-2 rabbit rat squirrel"],
  ["animals/marsupials", "kangaroo koala wombat"],
  ["animals/shellfish", "abalone murray-mussel"],
  ["clothes", "button clothespin_new clothespin_old t_baseballcap t_glove t_jacket t_pants t_poloshirt t_scarf t_shirt t_sock t_tshirt"],
  ["clothes/hats", "blue_fedora feathered_hat green_fedora propeller_hat sombrero tophat"],
  ["food/fruit", "Apricot_whole Cherry_Stella Strawberry2 apple_fuji apple_granny_smith apple_green apple_red apple_sierra_beauty apricot avocado banana cherimoya grapes kiwi lemon mandarine mango orange orange_seville pear pineapple pomegranate raspberry sliced_lime sliced_orange strawberry"],
  ["food/nuts", "almond pecan walnut walnut_shelled"],
  ["food", "pizza"],
  ["food/spices", "ginger"],
  ["food/vegetables", "broccoli carrot chilepepper corn eggplant garlic garlics lettuce mushroom onion pattypan_squash pepper potato pumpkin_small redlettuce tomato yam yellowpepper"],
  ["hobbies", "binoculars camera_35mm"],
  ["hobbies/music/brass", "trumpet"],
  ["hobbies/music/percussion", "cymbal_crash drum_tomtom_floor drumkit"],
  ["hobbies/music/string", "cello guitar2 guitar_classical guitar_electric guitar_electric_bass violin"],
  ["hobbies/music/wind", "bassoon"],
  ["household", "Lightbulb cylinder garbagecan home_compost_bin kettle key rubberduck toilet wheelie_bin"],
  ["household/arttools", "highlighter pen_dryerase scissors_small_closed scissors_small_open"],
  ["household/dishes", "glass mug pitcher_small teapot"],
  ["household/dishes/utensils", "nutcracker pepper_grinder"],
  ["household/tools", "cementmixer hammer mallet_metal measuring_tape measuring_tape_mirror paintbrush_large plyers saw spade toolbox wrench wrench_adjustable wrench_plumbers"],
  ["naturalforces", "explosion fire lightningbolt"],
  ["plants", "eggplant lavender lettuce_bolted thyme"],
  ["plants/flowers", "adeenia anemone_red anthoorium appooppanthady bolsom chemparathi daffodil flower1 flower10 flower2 flower3 flower4 flower5 flower6 flower7 flower8 flower9 iris marigold pigface red-gazania rose whitestar-petunia yellow-flower"],
  ["plants/flowers/plastic", "chuvanna_plastic_poo"],
  ["plants/mushrooms", "cep-1 cep-2 cep"],
  ["plants/trees", "birch holly_leaves holm_oak liberia-palm pinecone rambutan tree336"],
  ["space", "apollo_lander voyager2"],
  ["space/moon", "moon_3qt moon_crescent moon_full"],
  ["space/planets", "0_sun 1_mercury 2_venus 3_earth 4_mars 5_jupiter 6_saturn 7_uranus 8_neptune 9_pluto"],
  ["town/flags", "blue-and-yellowflag checkeredflag greenflag redflag whiteflag yellowflag"],
  ["town/monuments", "inukshuk-outline inukshuk-photo"],
  ["town/roadsigns", "arrow crossroads dead_end_sign give_way_sign hospital no_entry_sign no_uturn railroad_crossing roundabout school_sign stop stoplight_01_red stoplight_02_yellow stoplight_03_green t-junction toilets traffic_cone xing_ped xing_school xing_school_mirror yield"],
  ["town", "uk_post_box usps_mailbox"],
  ["vehicles", "7spoke256 garbagetruck wheel_tractor"],
  ["vehicles/auto", "beetle sedan truck"],
  ["vehicles/construction", "dumper dumper_mirror"],
  ["vehicles/cycle", "pink_tricycle"],
  ["vehicles/emergency", "firetruck sedan_police sedan_police_mirror"],
  ["vehicles/flight", "balloon360"],
  ["vehicles/flight/planes", "747"],
  ["vehicles/masstransit", "green_korean_bus"],
  ["vehicles/race", "indycar"],
  ["vehicles/ship", "chineseJunk walnutBoat"],
];

const MATE = [
  'abstract/Arc-Colors-Transparent-Wallpaper.png', 'abstract/Elephants.jpg', 'abstract/Flow.png', 'abstract/Gulp.png',
  'abstract/Silk.png', 'abstract/Spring.png', 'abstract/Waves.png', 'desktop/Float-into-MATE.png',
  'desktop/GreenTraditional.jpg', 'desktop/MATE-Stripes-Dark.png', 'desktop/MATE-Stripes-Light.png', 'desktop/Stripes.png',
  'desktop/Ubuntu-Mate-Cold-no-logo.png', 'desktop/Ubuntu-Mate-Dark-no-logo.png', 'desktop/Ubuntu-Mate-Radioactive-no-logo.png',
  'desktop/Ubuntu-Mate-Warm-no-logo.png', 'nature/Aqua.jpg', 'nature/Blinds.jpg', 'nature/Dune.jpg', 'nature/FreshFlower.jpg',
  'nature/Garden.jpg', 'nature/GreenMeadow.jpg', 'nature/LadyBird.jpg', 'nature/RainDrops.jpg', 'nature/Storm.jpg',
  'nature/TwoWings.jpg', 'nature/Wood.jpg', 'nature/YellowFlower.jpg',
];

/** scripts/setup/test-data.mjs sources: the same shape as its own. */
export const FACELESS_SOURCES = [
  {
    id: 'tuxpaint',
    kind: 'deb',
    pkg: 'tuxpaint-stamps-default',
    from: 'usr/share/tuxpaint/stamps',
    files: TUX_PAINT.flatMap(([dir, names]) => names.split(' ').map((n) => `${dir}/${n}.png`)),
  },
  // scikit-learn's two sample photos: a Chinese temple and a flower
  { id: 'sklearn', kind: 'deb', pkg: 'python3-sklearn', from: 'usr/lib/python3/dist-packages/sklearn/datasets/images', files: ['china.jpg', 'flower.jpg'] },
  { id: 'mate', kind: 'deb', pkg: 'mate-backgrounds', from: 'usr/share/backgrounds/mate', files: MATE },
  {
    id: 'ukui',
    kind: 'deb',
    pkg: 'ukui-wallpapers',
    from: 'usr/share/backgrounds',
    files: ['2004default.jpg', 'calla.png', 'city.png', 'desert.png', 'firstgeneration.jpg', 'fluent-color.png', 'focal-ubuntukylin.png',
      'goldfish.png', 'rhythm.jpg', 'rollpaper.png', 'string.jpg', 'the-mouse.jpg'],
  },
  {
    id: 'lomiri',
    kind: 'deb',
    pkg: 'lomiri-wallpapers-20.04',
    from: 'usr/share/backgrounds',
    files: ['Fossa_by_Jasper_Roks.jpg', 'Infinite-Sea_by_Aury88.jpg', 'Kleiber_by_Lukas_Baubkus.jpg', 'Painting-Colors_by__herobrine7gamer.jpg'],
  },
];
