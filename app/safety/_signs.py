"""Warning signs: what makes a message urgent when no single red flag of the table names the condition.

A triage nurse hears "tired, out of breath sitting down and an ache between the shoulder blades" or "high
temperature, shivering, heart racing, feels like passing out" as an emergency without a diagnosis. Each
category below is one kind of danger sign, in the seven languages; two different categories said of now (not
negated, not history, not a research question) make an emergency. The self-harm signs work alike: a
hopeless remark with a second warning sign (a plan, a goodbye, giving things away, feeling a burden) is a
risk of suicide; some signs are enough alone.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EMERGENCY_SIGNS", "EMERGENCY_STRONG", "SELF_HARM_SIGNS", "SELF_HARM_STRONG"]

EMERGENCY_SIGNS: Final[dict[str, str]] = {
    "consciousness": (
        r"(?:barely (?:responsive|conscious|awake|responding)|hard to wake|can't (?:really )?(?:wake|rouse)|won't wake|not waking|"
        r"(?:very|so|really|extremely) (?:drowsy|sleepy)|(?<!less )(?<!least )(?<!more )(?<!non.)drowsy|mumbling|confused|confusion|not making sense|talking (?:nonsense|gibberish|rubbish)|"
        r"not (?:himself|herself|with it)|out of it|floppy|limp|passed out|pass(?:ing)? out|fainted|collaps|unresponsive|"
        r"(?:going|feel(?:s|ing)?|felt) (?:like )?(?:i'?m |he'?s |she'?s )?(?:going to )?(?:pass out|faint)|lightheaded|light.headed|"
        r"(?:doesn't|does not|didn't) (?:know|recogni[sz]e) (?:who (?:i|she|he) (?:am|is)|me|us|where (?:she|he) is)|seeing (?:people|things) (?:\w+ ){0,4}(?:aren't|not) there|hallucinat|"
        r"(?:walking|walks) (?:like|as if) (?:\w+ ){0,3}drunk|camina como (?:borrach|ebri)|marche comme (?:\w+ ){0,3}(?:saoul|ivre)|lauft wie betrunken|anda como bebad|cammina come (?:ubriac)|loopt als een dronken|"
        r"desplom\w*|se (?:ha )?desmayado|"
        r"apenas responde|no responde|muy (?:dormido|adormilado|somnoliento)|desorientad|confus|se desmay|mareado y|"
        r"ne repond (?:presque )?pas|tres somnolent|somnolent|desoriente|evanoui|perd connaissance|"
        r"kaum ansprechbar|nicht ansprechbar|benommen|verwirrt|schlafrig|bewusstlos|ohnmacht|"
        r"mal responde|nao responde|muito (?:sonolento|sonolenta)|desmai|confus|"
        r"risponde appena|non risponde|molto (?:sonnolento|assonnato)|confus|svenut|svien|"
        r"reageert nauwelijks|nauwelijks aanspreekbaar|suf\b|verward|flauw|bewusteloos|heel slaperig|"
        r"(?:not sure|doesn't know|don't know) what day it is|(?:seeing|sees|see) (?:bugs|insects|spiders|snakes) (?:\w+ ){0,3}(?:crawling|on the walls)|"
        r"tout mou|toute molle|muy flojit[oa]|molinh[oa]|ganz schlapp|tutto moll[ei]|helemaal slap)"
    ),
    "breathing": (
        r"(?:(?:short|out) of breath|breathless|can't (?:catch (?:my|his|her) )?breathe?|struggl\w* to breathe|hard to breathe|"
        r"difficulty breathing|trouble breathing|gasping|wheez|can't (?:talk|speak|finish) (?:in )?(?:full |a )?sentences?|"
        r"(?:oximeter|sats?|saturation|spo2|oxygen) (?:\w+ ){0,3}(?:8\d|7\d|9[0-1])\b|"
        r"(?:noise|sound|squeak\w*|stridor|whistl\w*|wheez\w*) (?:\w+ ){0,5}(?:even )?(?:when|while) (?:he'?s |she'?s |they'?re |i'?m )?(?:resting|at rest|asleep|sleeping|sitting)|"
        r"out of breath (?:\w+ ){0,2}(?:sitting|at rest|lying|resting)|breathing (?:very |really )?(?:fast|slow|slowly|hard)|"
        r"lips? (?:\w+ ){0,2}(?:blue|grey|gray|purple)|bluish|blaulich|azulad|bleute|arroxead|bluastr|blauw|"
        r"(?:afunda|se hunde|se creuse|zieht sich|einzieh\w*|rientra|trekt in)\w* (?:\w+ ){0,2}(?:entre as costelas|entre las costillas|entre les cotes|zwischen den rippen|tra le costole|tussen de ribben)|"
        r"(?:going|turning|gone|ficando|poniendo|devient|wird|diventando|wordt) (?:\w+ ){0,2}(?:blue|purple|grey|gray|cinza|azul|gris|bleu|blau|grau|grigio|viola|blauw|grauw)|"
        r"sem ar|muito sem ar|"
        r"falta (?:de )?(?:aire|ar)|le cuesta respirar|ahog|respira (?:muy )?(?:rapido|mal|lento)|"
        r"essouffl|du mal a respirer|respire (?:mal|vite|tres vite)|souffle court|"
        r"atemnot|luftnot|kurzatmig|bekommt (?:kaum|keine) luft|atmet (?:schwer|schnell|langsam)|kann kaum sprechen|"
        r"falta de ar|nao consegue falar|respira(?:ndo)? (?:rapido|mal|com dificuldade)|"
        r"fiato corto|affanno|fatica a respirare|respira (?:male|veloce)|"
        r"kortademig|benauwd|ademt (?:snel|moeilijk|zwaar)|krijgt (?:geen|moeilijk) lucht)"
    ),
    "circulation": (
        r"(?:(?:tout |todo |ganz |tutto |helemaal )?(?:gris|grau|cinza|grigio|grauw)\b|transpire|transpira|schwitzt|sudando|suda\b|zweet|"
        r"ijskoud|eiskalt|helad[oa]|glace[e]?|gelad[oa]|gelid[oa]|ice.?cold|numb and (?:pale|white|cold)|(?:pale|white|cold) and numb|"
        r"pale and (?:sweaty|clammy|cold)|(?:sweaty|clammy|cold sweat|sweating (?:buckets|a lot|heavily))|grey|gray skin|mottled|"
        r"(?:heart|pulse) (?:is )?(?:racing|pounding|very fast|really fast|going like mad)|ice cold|(?:skin|hands|feet) (?:\w+ )?(?:very )?cold and|"
        r"(?:blood pressure|bp|pressao|presion|tension|blutdruck|pressione|bloeddruk) (?:\w+ ){0,3}(?:[5-8]\d) ?(?:/|over|por|sur|zu|su) ?[3-5]\d|"
        r"palid\w* y sud|sudor frio|suda mucho|pale et en sueur|sueurs froides|blass und (?:schweissig|kaltschweissig)|schweissig|kaltschweiss|"
        r"palido e suad|suor frio|suando muito|pallid\w* e sudat|sudore freddo|bleek en (?:zweterig|klam)|klam|koud zweet|"
        r"corazon (?:muy )?(?:acelerado|a mil)|coeur (?:qui )?(?:bat (?:tres )?vite|s'emballe)|herzrasen|coracao (?:acelerado|disparado)|"
        r"cuore (?:a mille|accelerato)|hartkloppingen|hart (?:gaat|klopt) (?:heel )?snel|"
        # a pulse in the twenties or thirties
        r"\b[23]\d (?:bpm|di battito|battiti|pulsaciones|latidos|batimentos|battements|schlage|slagen)\b|heart rate (?:of |is |at )?[23]\d\b)"
    ),
    "severe_pain": (
        r"(?:(?:painkillers?|paracetamol|ibuprofen|pain ?relief|morphine|tablets) (?:\w+ ){0,2}(?:aren't|isn't|not|don't|doesn't|won't) (?:touching|helping|working|touch|help|work)|"
        r"(?:pain|ache) (?:is )?(?:way |much |far )?worse|(?:doet|tut|fait|duele|doi|fa) (?:\w+ )?(?:ontzettend|extrem|terriblement|muchisimo|demais|tantissimo)|"
        r"(?:worst|extreme|excruciating|unbearable|agonising|agonizing|terrible|tearing|ripping|crushing|severe|intense|splitting) "
        r"(?:\w+ ){0,3}(?:pain|ache|headache|cramp)|in agony|(?:pain|ache)\w* (?:is )?(?:unbearable|excruciating)|"
        r"dolor (?:\w+ ){0,2}(?:insoportable|muy fuerte|intenso|horrible|desgarrador)|le duele muchisimo|"
        r"douleur (?:\w+ ){0,2}(?:insupportable|atroce|intense|violente|terrible|dechirante)|"
        r"(?:extrem|unertraglich|starkst|heftig|reissend|furchtbar|stark)\w* (?:\w+ )?\w*schmerz|"
        r"dor (?:\w+ ){0,2}(?:insuportavel|muito forte|intensa|terrivel|lancinante)|"
        r"dolore (?:\w+ ){0,2}(?:insopportabile|fortissimo|lancinante|atroce|terribile)|"
        r"(?:ondraaglijke|hevige|vreselijke|enorme|scheurende|ontzettende) (?:\w+ )?pijn|ontzettend (?:veel )?pijn)"
    ),
    "neuro": (
        r"(?:numb(?:ness)? (?:\w+ ){0,3}(?:saddle|between (?:my|his|her|the) legs|groin|bum)|(?:both|my|his|her) legs (?:\w+ ){0,2}(?:weak|numb|giving way)|"
        r"(?:wet|soiled) (?:my|him|her)self without|can't (?:hold|control) (?:my|his|her|the) (?:urine|wee|pee|bladder|bowels)|"
        r"(?:sudden|suddenly) (?:\w+ ){0,3}(?:weak|numb|dizzy|double vision|can't see|can't walk|can't stand)|(?:ziet|sees?|see) (?:ineens |suddenly )?(?:niks|nothing)|"
        r"vision (?:\w+ ){0,2}(?:gone|went|lost|black)|double vision|slurr|face (?:\w+ ){0,2}droop|"
        r"(?:vendo|ve|veo|voit|sieht|vede|seeing|sees) (?:tudo |todo |tout |alles |tutto |everything )?(?:dobrado|doble|double|doppelt|doppio|dubbel)|"
        r"(?:can't|cannot|nao consegue|no puede|ne (?:peut|tient)|kann nicht|non (?:riesce|sta)|kan niet) (?:\w+ ){0,2}(?:stand|ficar em pe|estar de pie|mantenerse en pie|debout|stehen|in piedi|staan|walk straight)|"
        r"(?:legs?|arms?|piernas?|jambes?|beine?|pernas?|gambe|benen?) (?:\w+ ){0,3}(?:jerk|twitch|spasm|sacud|secou|zuck|scatt|schok)\w*|jerking on (?:their|its) own|"
        r"(?:talks?|speaks?|parle|habla|spricht|fala|parla|praat) (?:\w+ ){0,2}(?:funny|strange|weird|bizarre|raro|komisch|estranho|strano|raar)|"
        r"taubheit (?:\w+ ){0,3}(?:zwischen den beinen|im schritt|reithose)|urin nicht (?:\w+ )?halten|beine (?:\w+ ){0,2}schwach|"
        r"entumecimiento (?:\w+ ){0,3}entre las piernas|no puedo controlar la orina|piernas debiles|"
        r"engourdissement (?:\w+ ){0,3}entre les jambes|perte d'urine|jambes faibles|dormencia (?:\w+ ){0,3}entre as pernas|"
        r"intorpidimento (?:\w+ ){0,3}tra le gambe|gambe deboli|gevoelloos (?:\w+ ){0,3}tussen (?:de|mijn) benen|benen (?:\w+ )?zwak)"
    ),
    "bleeding": (
        r"(?:soak\w* (?:through|right through)?|spurt|gush|pouring|pool of blood|(?:lots of|a lot of|so much|loads of|tons of) blood|"
        r"large clots|big clots|(?:won't|wont|will not|doesn't|does not) stop (?:bleeding)?|still bleeding|bleeding (?:a lot|heavily|badly)|"
        r"coagulos (?:grandes|enormes)|sangra (?:mucho|muchisimo)|a chorros|caillots|saigne (?:beaucoup|enormement)|"
        r"blutet (?:stark|sehr)|grosse blutgerinnsel|sangra(?:ndo)? muito|coagulos grandes|a fiotti|tantissimo sangue|"
        r"sanguina (?:molto|tantissimo)|si inzuppa|bloedt (?:hevig|heel erg)|grote stolsels|doorweekt)"
    ),
    "airway_swelling": (
        r"(?:(?:tongue|throat|lips?|face) (?:\w+ ){0,3}(?:swell|swollen|tight|closing)|hard to swallow|can't swallow|difficulty swallowing|"
        r"drooling|welts|(?:hives|rash|plaques|urticaria|ronchas|quaddeln|pomfi|bulten|manchas)\w* (?:\w+ ){0,3}(?:everywhere|all over|partout|por todo|uberall|dappertutto|overal)|"
        r"voz ronca|voix rauque|\bheiser|rouca|rauca|\bhees\b|hoarse|"
        r"lengua (?:\w+ ){0,2}hinch|garganta (?:\w+ ){0,2}(?:hinch|cerr)|no (?:puede|puedo) tragar|babea|"
        r"langue (?:\w+ ){0,2}gonfl|gorge (?:\w+ ){0,2}(?:gonfl|serr)|du mal a avaler|bave|"
        r"zunge (?:\w+ ){0,2}(?:schwillt|geschwollen)|hals (?:\w+ ){0,2}(?:eng|zu)|kann (?:kaum|nicht) schlucken|sabbert|"
        r"lingua (?:\w+ ){0,2}inchad|garganta (?:\w+ ){0,2}(?:inchad|fechand)|dificuldade (?:de|para|pra) engolir|baba|"
        r"lingua (?:\w+ ){0,2}gonfi|gola (?:\w+ ){0,2}(?:gonfi|chius)|fatica a deglutire|sbava|"
        r"tong (?:\w+ ){0,2}(?:zwelt|dik)|keel (?:\w+ ){0,2}(?:zwelt|dicht|dik)|moeite met slikken|kwijlt)"
    ),
    "chest_equivalent": (
        r"(?:chest (?:pain|tight\w*|pressure|discomfort|heav\w*)|(?:ache|pain|pressure|discomfort) (?:\w+ ){0,2}between (?:her|his|my|the) shoulder ?blades|"
        r"jaw (?:pain|ache)|pain in (?:my|his|her) (?:jaw|left arm)|bras gauche|machoire|brazo izquierdo|mandibula|linken arm|\bkiefer|braco esquerdo|"
        r"braccio sinistro|mascella|linkerarm|\bkaak|upper (?:belly|stomach|abdomen|tummy)|haut du ventre|parte de arriba de la barriga|"
        r"boca del estomago|oberbauch|zwischen den schulterblattern|parte de cima da barriga|parte alta della pancia|bovenbuik|entre (?:los|les) omoplat|"
        r"entre as omoplatas|tra le scapole|tussen de schouderbladen|dolor (?:en el|de) pecho|douleur (?:a la|dans la) poitrine|brustschmerz|"
        r"dor no peito|dolore al petto|pijn op de borst)"
    ),
    "acute_onset": (
        r"(?:since this (?:morning|afternoon|evening)|suddenly|out of nowhere|all of a sudden|de repente|de golpe|desde esta (?:manana|tarde)|"
        r"soudain|tout a coup|depuis ce (?:matin|soir)|plotzlich|seit heute (?:morgen|fruh|mittag)|do nada|desde hoje de manha|"
        r"improvvisamente|all'improvviso|da stamattina|ineens|plotseling|opeens|sinds vanochtend|sinds vanmiddag)"
    ),
    "fever": (
        r"(?:(?:high|very high) (?:temp|temperature|fever)|(?<!hay )fever|feverish|rigors|shivers|shivering|shaking (?:uncontrollably|all over)|"
        r"\b(?:3[89]|40|41)(?:[.,]\d)? ?(?:c\b|°|degrees)|\b(?:3[89]|40|41)[.,]\d\b|10[1-5](?:[.,]\d)? ?(?:f\b|°)|burning (?:up|hot)|"
        r"temp (?:is |of |was )?(?:3[89]|40|41)|ardiendo|brulant|glutheiss|ardendo|bollente|gloeiend|tremori|"
        r"fiebre|escalofrios|tiritando|fievre|frissons|fieber|schuttelfrost|febre|calafrios|tremendo|febbre|brividi|koorts|koude rillingen)"
    ),
    "vomiting": (
        r"(?:(?:keeps?|keep|can't stop|won't stop|constantly|non.?stop) (?:\w+ ){0,2}(?:vomit|throwing up|being sick)|"
        r"vomit\w* (?:\w+ ){0,3}(?:all night|all day|everything|even water|for hours|again and again)|throwing up (?:\w+ ){0,2}(?:everything|all night)|"
        r"can't keep (?:anything|fluids|water) down|vomit\w* (?:sin parar|sem parar|sans arret|senza sosta)|"
        r"vomita (?:todo|sin parar)|no para de vomitar|vomit (?:tout|sans arret)|"
        r"erbricht (?:alles|standig|dauernd)|vomita (?:tudo|sem parar)|vomita (?:tutto|continuamente)|moet (?:steeds|constant) overgeven|"
        r"blijft overgeven|green (?:vomit|sick)|vomit\w* (?:blood|sangre|sang|blut|sangue|bloed))"
    ),
    # Blood in a baby's or anyone's stool, or the redcurrant-jelly stool of intussusception: beside a second sign.
    "gut_blood": (
        r"(?:(?:caca|selles|poop|poo|stool|heces|kacke|stuhl|coco|feci|cacca|poep|ontlasting)\w* (?:\w+ ){0,5}(?:sang|blood|bloody|sangre|blut|sangue|bloed)|"
        r"red ?currant jelly|gelee de groseille|comme de la gelee|jalea de grosella|johannisbeergelee|geleia de groselha|gelatina di ribes|bessengelei)"
    ),
    # Weak legs in someone with cancer: spinal cord compression, enough alone.
    "cord": (
        r"(?:cancer|metasta\w*|tumou?r|krebs|cancro|kanker|tumeur)\b.{0,160}(?:legs?|piernas|jambes|beine|pernas|gambe|benen) (?:\w+ ){0,2}"
        r"(?:weak|giving way|flojas|debiles|faibles|molles|schwach|fracas|deboli|slap|zwak)"
    ),
    "skin": (
        r"(?:skin (?:\w+ ){0,4}(?:peeling|coming off)|peeling (?:skin|off)|blisters|skin (?:is )?(?:white|charred|black)|(?:big|large|huge) (?:area|blisters)|blistering|"
        r"(?:went|turned|gone) black|smell\w* (?:bad|awful|rotten)|fedendo|stinking|rash (?:\w+ ){0,3}(?:doesn't|won't|not) fade|"
        r"piel (?:\w+ )?(?:se cae|blanca|negra)|ampollas (?:grandes|enormes)|peau (?:qui part|blanche|noire)|cloques|"
        r"haut (?:lost sich|weiss|schwarz)|blasen|pele (?:saindo|branca|preta)|ficou preta|bolhas|pelle (?:che si stacca|bianca|nera)|"
        r"vesciche|huid (?:laat los|wit|zwart)|blaren)"
    ),
}

SELF_HARM_SIGNS: Final[dict[str, str]] = {
    "hopeless": (
        r"(?:(?:don't|dont|do not|can't|cannot) see (?:the|any) point|"
        r"(?:wil|want) (?:gewoon |just )?(?:dat het|it (?:all )?to) stop|quiero que (?:todo )?(?:pare|termine|se acabe)|je veux que (?:ca|tout) (?:s'arrete|finisse)|"
        r"ich will,? dass (?:es|alles) aufhort|quero que (?:isso|tudo) (?:pare|acabe)|voglio che (?:tutto )?finisca|cansad[oa] de (?:tudo|todo)|"
        r"(?:disappointed|upset|sad) (?:that )?i (?:woke|wake|did)|no point (?:in )?(?:anything|living|going on|waking)|"
        r"can't (?:go on|do this anymore|take (?:it|this) anymore|cope anymore)|(?:tired|sick) of (?:living|being alive|everything|life)|"
        r"(?:disappointed|upset) (?:that )?i (?:woke|wake)|(?:stopped|stop) caring|nothing (?:to live for|matters anymore)|"
        r"(?:wish|want) (?:i|he|she) (?:could )?(?:just )?(?:disappear|sleep forever|not wake up|was dead|were dead)|"
        r"no aguanto mas|no puedo mas|ya no (?:puedo|quiero)|sin sentido|j'en peux plus|je n'en peux plus|a quoi bon|plus la force|"
        r"ich kann nicht mehr|es hat (?:alles )?keinen sinn|hat keinen sinn mehr|nao aguento mais|nao consigo mais|sem sentido|"
        r"schaff\w* (?:das )?(?:alles )?nicht mehr|je (?:ne )?tiens plus|j'en peux plus|no puedo mas con|not long now|when i'?m ready to go|"
        r"(?:feeling|feel) like a burden|no point (?:anymore|any more)|what'?s the point (?:anymore|any more)|nothing (?:left )?to lose|"
        r"n(?:i|ich)ts mehr zu verlieren|nix mehr zu verlieren|nada (?:mas )?que perder|rien a perdre|nada a perder|niente da perdere|"
        r"niets (?:meer )?te verliezen|non ce la faccio piu|non ha (?:piu )?senso|zie het (?:echt )?niet meer zitten|kan het niet meer aan|heeft geen zin meer)"
    ),
    "death_thoughts": (
        r"(?:think\w* (?:about |of )?(?:dying|death|ending it|ending my life|killing)|(?:thoughts|thinking) (?:of|about) (?:death|dying|ending)|"
        r"acabar con (?:esto|todo|mi vida)|en finir|(?:thinking|thought) about (?:driving|jumping|crashing|hanging)|(?:driving|drive|crash\w*) (?:my )?(?:car )?into (?:a wall|a tree|traffic|a lorry|the river)|"
        r"(?:join|raggiunger\w*|reunirme con|rejoindre|juntar-me a) (?:her|him|mum|mom|dad|la|lo|ella|el)|"
        r"ending it|end it\b|(?:(?:don't|do not|can't|cannot) see the point|no point|any point) (?:\w+ ){0,2}(?:waking up|being alive|going on)|pienso en (?:morir|la muerte|matarme)|pense (?:a|souvent a) (?:mourir|la mort|en finir)|"
        r"denke? (?:\w+ )?(?:an|ans) (?:sterben|den tod)|penso em (?:morrer|morte)|penso (?:a|di) (?:morire|farla finita)|"
        r"denk (?:\w+ )?(?:aan|over) (?:dood|sterven|er een eind)|eind aan (?:te )?maken|einde aan (?:te )?maken)"
    ),
    "burden": (
        r"(?:(?:a )?burden|better off (?:without|with(?:out)? someone else|if i (?:just )?(?:wasn't|weren't|was not|were not) (?:here|around))|\beine last|\bnur eine last|(?:no one|nobody) (?:will|would) (?:miss|care|notice)|"
        r"won't (?:have to )?worry about me (?:much longer|soon|anymore)|(?:estariamos|estarian|estarias|estaran) mejor sin|una carga|"
        r"seriez mieux sans|je (?:ne )?sers a rien|personne (?:ne )?(?:le |me )?remarquer\w*|nadie (?:lo |me )?(?:notaria|echaria de menos)|un fardeau|personne ne (?:me )?manquera|besser ohne (?:mich|ihn|sie)|eine last|ficariam melhor sem|um fardo|"
        r"starebbero meglio senza|un peso|beter af zonder|een last|geen zorgen meer (?:om|over) (?:mij|me) (?:te )?maken|"
        r"binnenkort (?:\w+ ){0,4}geen zorgen)"
    ),
    "goodbye": (
        r"(?:merci pour tout|(?:the )?last time (?:i'll|ill|i will|you'll|youll|you will) (?:ever )?(?:be )?(?:writing|hear|see|talk)|pardonne.moi|sorry for everything|forgive me|look after (?:mum|mom|dad|the kids|my|them)|prends soin de|cuida (?:de|a) (?:mama|papa|mis)|"
        r"pass (?:gut )?auf (?:mama|papa) auf|zorg goed voor|prenditi cura di|i love you all,? goodbye|goodbye\W*$|"
        r"(?:briefje|brief|note|letter|carta|lettre|bilhete|lettera|abschiedsbrief) (?:\w+ ){0,3}(?:geschreven|written|wrote|escrito|ecrit|geschrieben|escrevi|scritto)|"
        r"(?:wrote|written|writing|escrib\w*|ecrit|geschrieben|escrevi|scritto|geschreven) (?:\w+ ){0,3}(?:note|letter|carta|lettre|brief|bilhete|lettera|briefje)|"
        r"gave (?:his|her|my) \w+ (?:away|to)\b|(?:cat|dog|pets?|bird|rabbit)s? (?:\w+ ){0,3}(?:a )?good home|"
        r"say(?:ing)? goodbye|said goodbye (?:like|as if)|goodbye (?:letter|note|message)s?|(?:gave|giving|given) (?:away )?(?:\w+ ){0,2}"
        r"(?:stuff|things|belongings|possessions|watch|jewel\w*|savings)|(?:you'll|youll) need (?:these|this|it) more than me|"
        r"se (?:despidio|ha despedido)|regalando sus cosas|regalado sus cosas|dit au revoir|donne ses affaires|"
        r"verabschiedet|verschenkt (?:seine|ihre|alle)|se despediu|dando as coisas|si e congedat|regalando le sue cose|"
        r"afscheid genomen|sieraden (?:\w+ ){0,3}gegeven|spullen weg(?:gegeven|geven))"
    ),
    "plan": (
        r"(?:(?:a|my|the) plan and a date|(?:so |solo |only |just )?falta (?:\w+ )?(?:escolher|elegir) (?:o|el) dia|"
        r"(?:only|just) (?:need to |have to )?(?:choose|pick) the day|(?:have|got|made) a plan|(?:chosen|decided|picked) (?:how|when|the day)|already (?:chosen|decided) how|"
        r"(?:putting|put|keeping|kept|saving|saved|hiding|hid) (?:my |his |her )?(?:tablets|pills|meds|medication) (?:aside|away|back|up)|"
        r"(?:bought|achete|compre|gekauft|comprei|comprato|gekocht|got) (?:\w+ )?(?:a |une |una |ein\w* |uma |een )?(?:rope|corde|cuerda|soga|seil|strick|corda|touw|poison|veleno|veneno|gift|gif|rat poison|mort aux rats)\b|"
        r"(?:comprare|buying) (?:del |some )?(?:veleno|poison)|(?:waffe|gun|arma|pistolet|fusil|pistola|geweer|wapen|rifle|shotgun) (?:\w+ ){0,4}(?:geholt|out|sacado|sorti|tirado|preso|gepakt|holding|sitzt)|"
        r"stockpil\w*|hoard\w*|i have enough now|genoeg pillen|enough pills|suficientes pastillas|assez de (?:pilules|cachets|medicaments)|genug tabletten|comprimidos suficientes|abbastanza pillole|"
        r"wie ich es mache|zusammengesucht|(?:antes de|before i|avant de|bevor ich|prima di|voordat ik) (?:pular|saltar|jump|sauter|springe|saltare|spring)|"
        r"(?:standing|stood|sitting) (?:\w+ ){0,2}(?:by|on|near|at) (?:the )?(?:train tracks|railway|bridge|edge|roof|cliff|ledge)|"
        r"(?:looked|looking|staring|stared) (?:\w+ ){0,2}(?:at|over|down) (?:the )?(?:bridge|edge|tracks|railway|river|drop)|"
        r"(?:tentative|attempt|intento|versuch|tentativa|tentativo|poging)\w* .{0,60}(?:not answering|isn't answering|phone (?:is )?off|repond plus|no contesta|geht nicht ran|nao atende|non risponde|neemt niet op)|"
        r"(?:not answering|isn't answering|phone (?:is )?off|repond plus|no contesta|geht nicht ran|nao atende|non risponde|neemt niet op) .{0,80}(?:tried before|tentative|attempt|intento|versuch|tentativa|tentativo|poging)|"
        r"instead of taking them|(?:cleaning|bought|got) (?:my |a )?(?:gun|rope)|razor (?:to|on) (?:my|his|her) (?:wrist|arm)|"
        r"(?:ya )?(?:he|tengo) (?:elegido|decidido) como|deja choisi comment|j'ai un plan|schon entschieden wie|einen plan|"
        r"ja (?:escolhi|decidi) como|ho gia deciso come|heb (?:al )?besloten hoe|disappear permanently|desaparecer para siempre|"
        r"disparaitre (?:pour toujours|definitivement)|fur immer verschwinden|desaparecer para sempre|sparire per sempre|voorgoed verdwijnen)"
    ),
    # Where a jump or a train is at hand, said of now: a warning sign only beside a second one.
    "place": (
        r"(?:(?:sta|staat|estoy|je suis|ich stehe|ich bin|estou|sono|i'm|im|standing) (?:\w+ ){0,2}(?:op het dak|op de brug|op het perron|"
        r"on (?:the|a) (?:roof|bridge|ledge|platform)|en el (?:tejado|techo|puente|anden)|sur le (?:toit|pont|quai)|auf dem (?:dach|bahnsteig)|"
        r"auf der brucke|no (?:telhado|terraco|viaduto)|na ponte|sul (?:tetto|ponte|binario))|regarde les trains|watching the trains)"
    ),
    # Affairs put in order: a warning sign only beside a second one.
    "affairs": (
        r"(?:life insurance|lebensversicherung|seguro de vida|assurance.vie|assicurazione sulla vita|levensverzekering|"
        r"(?:unterlagen|papers|papeles|papiers|documentos|documenti|papieren|affairs) (?:\w+ ){0,4}(?:sortiert|in order|en orden|en ordre|"
        r"em ordem|in ordine|op orde|geregelt))"
    ),
}
# Signs that are enough alone: a plan, a goodbye, putting pills aside; "ending it" said of oneself.
SELF_HARM_STRONG: Final = frozenset({"plan", "death_thoughts", "goodbye"})
# Danger signs that are enough alone: heavy bleeding.
EMERGENCY_STRONG: Final = frozenset({"bleeding", "cord"})
