"""The red-flag table: per condition, the cues (regular expressions over folded, lower-cased text) that make a
question urgent, in the seven languages the service reads (en, es, fr, de, pt, it, nl).

A rule fires when its ``cue`` matches and, if it has any, each of its ``with_`` groups matches somewhere in the
question (a symptom and what makes it urgent: fever *and* an infant under three months). The detector
(:mod:`app.safety._detect`) then drops a cue that is negated, told as history, asked hypothetically or as a
research or general-information question, clause by clause. Patterns are written from triage guidance (NHS
111, the Manchester Triage System's discriminators, crisis-line guidance), not from any evaluation set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["FEVER", "RED_FLAGS", "Kind", "RedFlag"]

Kind = Literal["emergency", "self_harm", "lethal_means"]

# Shared fragments (folded text: no accents, lower case, apostrophes as ').
_PERSON = r"(?:he|she|they|i|my \w+|his|her|we|mi|mon|ma|mein|meine|meu|minha|mio|mia|mijn|il|elle|er|sie|ele|ela|lui|lei|hij|zij|ze)"
FEVER = (
    r"(?:(?<!hay )fever|feverish|temperature|temp of|high temp|3[89](?:[.,]\d)?\s*(?:c\b|°|degrees)|\b(?:3[89]|40|41)[.,]\d\b|feels? (?:very )?hot|hot to (?:the )?touch|10[0-4](?:[.,]\d)?\s*"
    r"(?:f\b|°)|burning up|burning hot|fiebre|calentura|fievre|fieber|febre|febbre|koorts|verhoging)"
)
_CONFUSED = (
    r"(?:confus|disorient|not making sense|making no sense|talking nonsense|delirious|drowsy|hard to wake|"
    r"can't (?:wake|rouse)|barely (?:awake|responsive|responding)|not himself|not herself|out of it|"
    r"verward|verwirrt|desorientad|desoriente|no (?:nos )?reconoce|ne (?:nous )?reconnait|erkennt (?:uns|mich) nicht|"
    r"herkent (?:ons|me|mij)|nao (?:nos )?reconhece|non (?:ci )?riconosce|dit n'importe quoi|sagt wirres|"
    r"dice cosas sin sentido|somnolient|benommen|sonolent|sonnolent|slaperig|\bsuf\b|apathisch|adormilad|decaid|molinh|letharg|letargic|listless|floppy|lusteloos|schlapp|sleepier than|very sleepy|so sleepy|hard to rouse)"
)
_SWALLOW = (
    r"(?:swallow(?:ed)?|ate|eaten|has eaten|drank|drunk|chewed|bit into|sucked|licked|got into|put .{0,20} in (?:his|her|their) mouth|"
    r"(?:se )?trag(?:o|ado)|ingiri|comi(?:o|do)|bebi(?:o|do)|a avale|a bu|a mange|a croque|"
    r"verschluckt|geschluckt|gegessen|getrunken|(?:rum|zer)?gekaut|engoliu|engoli|bebeu|comeu|ingoiat|ha bevuto|ha mangiato|"
    r"ingeslikt|doorgeslikt|gedronken|opgegeten|in (?:zijn|haar) mond)"
)
_INFANT_AGE = (
    r"(?:new ?born|neonat|recien nacid|nouveau.ne|neugeboren|recem.nascid|pasgebor|"
    r"\b(?:[1-9]|1[0-2]|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)[ -](?:weeks?|wks?)[ -]old|"
    r"\b(?:he|she|baby|bebe|is|de|van|di|von|of|mit)(?:'s)? (?:[1-9]|1[0-2]) ?(?:weeks|wks|semanas|semaines|wochen|settimane|weken)\b|"
    r"\b(?:[1-9]|1[0-2]) ?(?:weeks?|wks?|semanas|semaines|wochen|settimane|weken)[ -](?:old|oud|alt)\b|"
    r"\b(?:[1-9]|[1-5]\d) ?(?:days?|dias|jours|tage|giorni|dagen)[ -](?:old|oud|alt|de vida|de vie|di vita)\b|"
    r"\b(?:1|2|one|two|un|une|uno|dos|zwei|ein|einen|dois|um|due|een|twee)[ -]?(?:months?|mes|meses|mois|monate?n?|mesi|maanden|maand)[ -]?(?:old|oud|alt)?\b|"
    r"(?:de|van|di|von) (?:[1-9]|1[0-2]) (?:semanas|semaines|wochen|settimane|weken)|"
    r"\b(?:tiene|tem|a|hat|ha|heeft|has|is|nur|only|just|solo|seulement|apenas|pas)(?:'s)? (?:[1-9]|1[0-2]) ?(?:weeks|wks|semanas|semaines|wochen|settimane|weken)\b|"
    r"\b(?:1|2|one|two)[ -]month[ -]old)"
)
_PREGNANT = (
    r"(?:pregnan|weeks gone|due in \d|embarazad|encinta|enceinte|grossesse|schwanger|\bssw\b|schwangerschaftswoche|\d\d\. woche|gravida|gravidez|gestante|incinta|"
    r"\b(?:[2-4]\d) (?:weeks|wks|semanas|semaines|wochen|settimane|weken)\b(?! (?:old|ago|oud|alt|fa|geleden))|waters? (?:just )?(?:broke|broken|went)|"
    r"(?:se me )?rompio la (?:bolsa|fuente)|perdu les eaux|fruchtblase (?:ist )?geplatzt|bolsa (?:estourou|rompeu)|rotto le acque|vliezen (?:zijn )?gebroken|"
    r"gravidanza|zwanger|in verwachting)"
)
_THINNER = (
    r"(?:blood thinner|anticoagul|warfarin|coumadin|apixaban|eliquis|rivaroxaban|xarelto|dabigatran|pradaxa|"
    r"edoxaban|lixiana|heparin|enoxaparin|clexane|clopidogrel|plavix|sintrom|acenocoumarol|marcoumar|"
    r"marcumar|phenprocoumon|bloedverdunner|anticoagulante|anticoagulant|blutverdunner|anticoagulanti|"
    r"fluidificante|antistolling|diluidor|sangue ralo)"
)
_HEAD = r"(?:head|cabeza|tete|kopf|cabeca|testa|hoofd)"
_HEAD_HIT = (
    r"(?:hit|bump|bang|knock|struck|smack|fell|fall|fallen|crash|car accident|accident|collision|choque|accidente|unfall|acidente|incidente|ongeluk|aanrijding|trip|slipped|golpe|golpeo|cayo|caida|se cayo|coup|cogne|tombe|chute|"
    r"gestossen|gestosen|gesturzt|sturz|gefallen|aufgeschlagen|bateu|pancada|caiu|queda|battuto|sbattuto|caduto|caduta|"
    r"gestoten|gevallen|val|viel|stootte)"
)
_BREATHLESS = (
    r"(?:short of breath|shortness of breath|breathless|out of breath|can't (?:catch (?:my|his|her) )?breath|"
    r"struggling to breathe|hard to breathe|difficulty breathing|trouble breathing|falta de aire|le cuesta respirar|"
    r"essouffl|du mal a respirer|kurzatmig|atemnot|luftnot|falta de ar|sem ar|affanno|fiato corto|senza fiato|"
    r"kortademig|benauwd|buiten adem)"
)


@dataclass(frozen=True, slots=True)
class RedFlag:
    """One condition: ``cue`` (the alarming detail) and ``with_`` (groups that must also appear anywhere)."""

    condition: str
    kind: Kind
    summary: str  # the documented description (docs/safety.md)
    cue: str
    with_: tuple[str, ...] = ()


# A request for a lethal amount or a method, in general form (issue 28's lethal-means misses): a quantity asked
# about next to a death word, either order; a way to die that is painless or quickest, or two methods compared
# on pain; a height or a depth to be sure. Never excused by research or fiction wording (see _detect._excused).
_QUANTITY = (
    r"(?:how (?:much|many)|what (?:amount|dose|quantity)|cuant[oa]s?|combien|wie ?viel\w*|ab welcher (?:menge|dosis)|"
    r"welche (?:menge|dosis)|quant[oaie]s?|quantidade|qual a dose|quelle (?:dose|quantite)|welke (?:hoeveelheid|dosis)|hoeveel)"
    # "how many people die of ...", "how many lives are saved" and "how much time before he dies" are epidemiology
    # and palliative care
    r"(?! (?:percent|per cent|procent|prozent|porcentaje|por ciento|pourcentage|pour cent|percentagem|por cento|percentuale|"
    r"per cento|bringt|hilft|helps?|ayuda|aide|ajuda|aiuta|helpt|people|persons|personas|gente|personnes|gens|menschen|leute|pessoas|persone|mensen|deaths|patients|cases|of them|"
    r"lives|vidas|vies|leben|vite|levens|times?|days|weeks|months|years|tiempo|dias|temps|jours|zeit|tage|tempo|giorni|"
    r"tijd|dagen|anos|ans|jahre|anni|jaar)\b)"
)
_DEATH = (
    r"\b(?:kill\w*|(?:to|would|will|could|i|you|someone|somebody|he|she|they|person|adult) die\b|dead\b|death|fatal|lethal|deadly|"
    r"stop (?:\w+ ){0,2}(?:heart|breathing)|overdose|od\b|end(?:s|ing)? (?:his|her|my|their|your) life|en finir|"
    r"acabar con (?:todo|su vida)|mettre fin|end it\b|morir|muer[ea]|mortal|letal|mata\b|matar\w*|mourir|meurt|mort\b|mortel\w*|"
    r"tuer?\b|arreter le coeur|tod\b|to?e?dlich\w*|totet|sterben|stirbt|herzstillstand|herz (?:anhalten|stoppen|stehen)|morrer|"
    r"morre\b|morte\b|parar o coracao|morire|muore|mortale|letale|uccid\w*|fermare il cuore|arresto cardiaco|overlijd\w*|dood\w*|"
    r"sterft|sterven|dodelijk\w*|hart (?:stil|stoppen|laten stoppen)|"
    r"(?:no|not|don't|doesn't|never|ya no|nicht mehr|niet meer|ne se|ne plus|non|nao) (?:\w+ ){0,2}(?:wake up|wakes up|despertar|"
    r"aufwach\w*|wakker|reveill\w*|svegli\w*|acordar)|niet meer uit te komen|non farcela|to be enough|make sure|be sure)"
)
_METHODS = (
    r"(?:hang\w*|pills|tablets|gas|jump\w*|cutting|ahorca\w*|pastillas|pendre|medocs|tabletten|abgase|comprimidos|pastiglie|"
    r"farmaci|impicca\w*|pillen|ophangen|enforca\w*|carbon monoxide|car exhaust)"
)
# Painless or quick, in the seven languages: the core of the two lists below.
_PAINLESS = (
    r"painless|less painful|least painful|sin dolor|menos doloros\w*|indolor\w*|sans douleur|moins doulour\w*|"
    r"schmerzlos\w*|ohne schmerzen|meno doloros\w*|meno male|senza dolore|pijnloos|zonder pijn|geen pijn|quickest"
)
_LESS_PAIN = r"(?:" + _PAINLESS + r"|hurts? less|duele menos|minder pijn|snelst\w*)"
_WAY = r"\b(?:way|method|metodo|manier|methode|modo|jeito|forma|manera|facon)\b"
_TWO_METHODS = _METHODS + r"\b.{0,20}\b(?:or|o|ou|oder|of)\b.{0,20}\b" + _METHODS + r"\b"
_LETHAL_GENERAL = (
    r"\b"
    + _QUANTITY
    + r"\b.{0,80}"
    + _DEATH
    + r"|"
    + _DEATH
    # then the quantity, but not "by how much" a death rate fell ("de combien")
    + r".{0,80}(?<!\bde )(?<!\bby )\b"
    + _QUANTITY
    + r"\b|"
    + _WAY
    + r".{0,40}"
    + _LESS_PAIN
    + r"|"
    + _TWO_METHODS
    + r".{0,60}"
    + _LESS_PAIN
    + r"|"
    + _LESS_PAIN
    + r".{0,40}\b"
    + _TWO_METHODS
    + r"|(?:"
    + _PAINLESS
    + r"|most painless|without (?:any )?pain|fastest|surest|mas rapid\w*|plus rapide|schnellste\w*|mais rapid\w*|"
    # then a death word or a method of self-harm ("the fastest way to get over a cold" asks nothing of the kind)
    r"piu (?:rapid|veloce|sicur)\w*|snelste).{0,60}(?:"
    + _DEATH
    + r"|hang\w*|ahorca\w*|pendre|impicca\w*|ophang\w*|enforca\w*|jump\w* (?:off|from|in front)|springen|sauter|buttar\w*|tirarme|abgase|to go\b|zelfmoord|overlijd\w*|sterven)|"
    r"(?:how|what|which|de que|de quelle|aus welcher|van welke|da che|da quale|de qual) (?:high|height|tall|altura|hauteur|hohe|"
    r"hoogte|altezza|piano|etage|stock).{0,60}(?:fall|jump|fatal|survive|sure|morir|mourir|sterben|morrer|morire|dood|buttar\w*|"
    r"tirar\w*|sauter|springen|pular|tod|sicher)|how deep .{0,30}(?:cut|wrist|artery|vein)|"
    r"(?:garage|garaje|garagem)\w* .{0,40}(?:engine|motor\w*|moteur) (?:running|laufend\w*|en marcha|ligado|acceso|allume|aan|"
    r"draaiend)|laufendem motor|helium .{0,40}(?:bag|zak|bolsa|sac|beutel|tute|saco|sacchetto)|(?:bag|zak|bolsa|sac|beutel|saco|sacchetto)\b.{0,40}\bhelium|exit bag|suicide bag|"
    # how deep or which way to cut a wrist, in each language ("per un progetto di anatomia" excuses nothing)
    r"(?:wrists?|polso|muneca|poignet|handgelenk|pols|pulso)\b.{0,80}\b(?:deep|profond\w*|profund\w*|tief\w*|diep\w*|direction|direzione|direccion|direcao|richtung|richting)|(?:how deep|which (?:way|direction)|quanto profond\w*|in che "
    r"direzione|que tan profund\w*|en que direccion|quelle profondeur|dans quel sens|wie tief|in welche richtung|quao profund\w*|em que direcao|hoe diep|in welke richting)\b.{0,80}\b(?:wrists?|polso|muneca|poignet|handgelenk|pols|pulso)|"
    # the fastest poison, either order (not food poisoning or poison ivy, nor how to recover from one)
    r"(?:poisons?|(?:welches|das|ein|einem|dem) gift|veneno|veleno|gif)\b(?! ivy| oak)(?:(?!recover|get over|treat|cure|relief|rid of|antidote).){0,60}\b(?:am schnellsten|fastest|quickest|mas rapid\w*|plus rapide\w*|piu (?:veloce|rapid\w*)|mais rapid\w*|snelst\w*)|"
    r"(?:schnellste\w*|fastest|quickest|mas rapid\w*|plus rapide\w*|piu (?:veloce|rapid\w*)|mais rapid\w*|snelst\w*) (?:\w+ ){0,3}(?:poisons?|gift|veneno|veleno|gif)\b(?! ivy| oak)|"
    r"(?:take|took|swallow\w*) all (?:of )?(?:your|my|his|her|their) (?:\w+ )?(?:pills|tablets|meds|medicines|medication) (?:at once|in one go|together|at the same time)|"
    # where to cut so that it will not stop bleeding
    r"(?:where|how|which) .{0,40}\bcut\w*.{0,60}(?:bleeds? (?:the )?most|bleed out|can't be stopped|cannot be stopped|"
    r"won't stop|artery|arteries|vein)"
)

RED_FLAGS: Final[tuple[RedFlag, ...]] = (
    # --- self-harm and lethal means first: the detector reports the first kind found in this order ---------
    RedFlag(
        "suicide_risk",
        "self_harm",
        "suicidal thoughts, plans or intent, stated directly or indirectly (wanting to die, being a burden, "
        "goodbye notes, stockpiling medicines)",
        r"(?:kill(?:ing)? (?:my|him|her|them)sel(?:f|ves)|end(?:ing)? (?:my|his|her|their) (?:own )?li(?:fe|ves)|"
        r"take (?:my|his|her) (?:own )?life|suicid|want(?:s|ed)? to die|wish(?:es|ed)? (?:i|he|she) (?:was|were) dead|"
        r"(?:don't|do not|doesn't|does not|no longer) want to (?:live|be alive|be here|wake up|go on)|"
        r"(?:better off|be better) (?:dead|without me|without him|without her)|(?:no|any) (?:point|reason) (?:in )?"
        r"(?:living|to live|going on|carrying on)|can't go on|end it all|(?:a )?burden to (?:everyone|my family|them)|"
        r"(?:saving|saved|stockpil\w*|hoard\w*|collect\w*|kept|keeping|stash\w*) (?:up )?(?:all )?(?:of )?(?:my|his|her) "
        r"(?:pills|tablets|meds|medication|medicines|prescriptions?|sleeping pills|painkillers)|"
        r"(?:goodbye|suicide) (?:note|letter)s?|giving (?:away )?(?:his|her|my) (?:things|stuff|belongings) away|"
        r"not (?:be )?(?:around|here) (?:much longer|anymore|for long)|(?:sleep|go to sleep) and (?:never|not) wake up|never wake up again|"
        r"(?:easier|better|simpler) for (?:everyone|everybody|my family|them) if (?:i|he|she)|(?:if|wish) (?:i|he|she) (?:wasn't|weren't|was not|were not) (?:here|around|alive)|"
        r"(?:thinking|thought|think)\w* (?:about )?how easy it would be|"
        r"not (?:planning on |going to (?:be )?)?(?:be|being) (?:here|around) (?:after|by|past|beyond)|"
        r"(?:saving|saved|stockpil\w*|hoard\w*) (?:\w+ ){0,2}up\b.{0,60}(?:just in case|in case i|enough|months? worth)|"
        r"spring\w* (?:ik |hij |ze |zij )?(?:\w+ ){0,3}(?:van|voor|af) (?:het dak|de brug|een flat|de trein|de flat)|jump\w* (?:off|from|in front of) (?:a |the )?(?:bridge|building|roof|train|cliff)|"
        r"in front of (?:a|the) (?:\w+ ){0,2}(?:train|bus|lorry|truck|tram)\b(?! (?:stop|station|shelter|driver|lane))|"
        # Stepping off a platform or into traffic (batch 15's miss: "nearly stepping off the platform in front
        # of the fast train"), in each language.
        r"(?:step|walk|run|jump)\w* (?:out )?(?:off the platform|onto the (?:tracks|line|rails)|into (?:the )?(?:oncoming )?"
        r"traffic)|(?:me jeter|se jeter|me lancer) (?:sous|devant) (?:un|le) (?:train|bus|camion|voiture)|"
        r"vor (?:den|einen) (?:zug|bus|lkw)|voor (?:de|een) (?:trein|bus|vrachtwagen) (?:springen|lopen|stappen)|"
        r"(?:tirarme|lanzarme|echarme) (?:debajo|delante) de(?:l| un)? (?:tren|autobus|camion|coche)|"
        r"(?:buttarmi|gettarmi) sotto (?:il|un) (?:treno|autobus|camion)|"
        r"(?:atirar-me|jogar-me|me jogar|me atirar) (?:para a frente|na frente|debaixo) d[eo]s? (?:comboio|trem|autocarro|onibus|camiao)|"
        r"(?:search|look|googl|read)\w* (?:up |online |on the internet )?(?:for )?(?:ways|methods|how) to (?:die|kill|end)|"
        r"(?:do|does|did|to do) something (?:to|stupid to) (?:my|him|her)self|(?:decided|going|planning|plan|want) to end it|"
        r"end it (?:tonight|today|now|soon|this week)|wr(?:ote|itten|iting) (?:\w+ )?(?:letters|notes?|goodbyes?) (?:to|for) (?:my|the|all)|"
        r"plus simple pour tout le monde|si je n'etais plus la|disparaitre pour toujours|(?:sich|mir|mich) (?:etwas|was) (?:antun|anzutun)|nach methoden|"
        r"(?:se|me) (?:quiere )?hacer algo|metodos para (?:morir|matarse)|fazer (?:alguma coisa|algo) contra (?:si|mim)|farsi (?:qualcosa|del male)|"
        r"zichzelf iets aan|(?:me|se) faire (?:une betise|du mal)|voices (?:are )?telling (?:him|her|me) to (?:kill|hurt|harm|die)|"
        r"(?:thoughts?|thinking) (?:of|about) (?:harming|hurting|killing) (?:my|the) (?:baby|child|kids?)|"
        r"quitarme la vida|matarme|matarse|(?:me|se|te) matar|ammazzar(?:mi|si)|uccider(?:mi|si)|(?:se|me) tuer|mich umbringen|sich umbringen|"
        r"tirarme (?:del|de un|de una|por|a las|al)|(?:ich )?will (?:einfach )?nicht mehr(?:\s*[,.!?;]|$)|"
        r"(?:tabletten|pillen|pastillas|comprimidos|compresse|pilules|medicamentos|medicijnen) (?:\w+ )?(?:gesammelt|gehortet|gespaard|"
        r"guardad[oa]s|acumulad[oa]s|messe da parte|accumulat[ei]|de cote|mis de cote|verzameld)|no quiero (?:seguir )?vivir|(?:quiero|queria) morir(?:me)?|acabar con todo|"
        r"no vale la pena vivir|desaparecer para siempre|"
        r"me tuer|en finir|mettre fin a (?:mes|ses) jours|(?:je veux|il veut|elle veut|envie de) mourir|"
        r"plus envie de vivre|"
        r"selbstmord|mich umbringen|mir das leben nehmen|(?:will|mochte) (?:nicht mehr leben|sterben)|"
        r"nicht mehr (?:leben|aufwachen)|sterben will|"
        r"me matar|tirar a (?:minha|propria) vida|nao quero (?:mais )?viver|quero morrer|acabar com tudo|"
        r"uccidermi|togliermi la vita|farla finita|non voglio (?:piu )?vivere|voglio morire|"
        r"zelfmoord|van kant maken|niet meer (?:willen )?leven|wil (?:niet meer leven|dood)|dood (?:willen|wil)|"
        r"er een einde aan maken|een einde aan (?:mijn|zijn|haar) leven)",
    ),
    RedFlag(
        "self_injury",
        "self_harm",
        "self-injury now or recently: cutting, burning, hitting oneself",
        r"(?:(?:hurt|harm|cut|cutting|burn|burning|hit|hitting|injur\w*|scratch\w*) (?:my|him|her|them)sel(?:f|ves)|"
        r"self[- ]?harm|self[- ]?injur|cutting again|(?:start|started|starting|back to|gone back to|went back to) (?:\w+ )?(?:cutting|self.harming|burning myself)\b(?! (?:down|back|out|up|off|costs?|the|my hair|her hair|his hair|into|through|carbs|sugar|wood|grass|it out|class))|volvi a cortarme|(?:recommence|recommencer) a me (?:couper|scarifier)|"
        r"wieder (?:angefangen )?(?:zu )?ritzen|voltei a me cortar|(?:ricominciato|ricominciata) a tagliarmi|weer (?:begonnen )?"
        r"(?:met )?(?:snijden|krassen)|(?:cuts?|cutting|scars from cutting)\b.{0,80}(?:deeper|couldn't stop the bleeding|won't stop bleeding)|cutting (?:her|his|my) (?:arms|wrists|legs|thighs|skin)|razor blades?|"
        r"hacerme dano|hacerse dano|cortarme|se corta|autolesi|me faire du mal|se scarifi|me scarifi|scarification|"
        r"automutil|mich (?:selbst )?verletz|ritzt sich|ritze mich|ritzen|selbstverletz|me machucar|me cortar|"
        r"se cortar|se corta|autolesao|farmi del male|tagliarmi|si taglia|autolesion|mezelf (?:pijn doen|snijden|"
        r"iets aandoen)|snijdt zichzelf|zelfbeschadig|zelfverwond)",
    ),
    RedFlag(
        "lethal_amount",
        "lethal_means",
        "a lethal, fatal or overdose amount, or a method of ending a life",
        r"(?:(?:lethal|fatal|deadly|killing|toxic|overdose) (?:dose|amount|quantity|level)|"
        r"how (?:many|much) .{0,60}(?:to die|to kill|would kill|kill (?:me|you|a person|someone|an adult)|to overdose|"
        r"to od|for an overdose|is lethal|is fatal|be fatal|be lethal|would it take|to not wake up|never wake up|"
        r"to end it|to stop (?:my|your) heart)|"
        r"(?:enough|sufficient) (?:\w+ ){0,4}to (?:kill|die|not wake|end it)|(?:how (?:much|many)).{0,80}(?:make sure it works|make sure it'?s enough|to do it properly)|"
        r"para no (?:volver a )?despertar|pour ne (?:plus|pas) (?:me |se )?reveiller|um nicht (?:mehr )?aufzuwachen|para nao (?:mais )?acordar|"
        r"per non (?:svegliarmi|risvegliarmi)|om niet meer wakker|(?:suficiente|suffisant|genug|abbastanza|genoeg)\w* .{0,30}(?:morir|matar|mourir|tuer|sterben|morrer|morire|dood)|"
        r"car running in (?:a|the) (?:closed|shut|locked)? ?garage|exhaust (?:pipe|fumes|hose)|hose (?:from|to|on) the exhaust|how long (?:would|does|will) it take (?:to die|to suffocate|to bleed out)|"
        r"(?:tie|make) a noose|hang (?:my|your)self|how (?:high|tall) .{0,40}(?:to die|fatal|kill|survive a fall)|charcoal .{0,30}(?:room|tent|car|sealed)|"
        r"(?:what|which|how much|how many|how high|quelle?|combien|cual|cuanta|cuantas|welche|wie viel|qual|quanta|quale|welke|hoeveel) (?:\w+ ){0,4}"
        r"(?:dose|amount|height|number|quantity|much|many|dosis|quantite|menge|quantidade|quantita|hoeveelheid|hoogte|altura|hauteur|hohe|altezza|"
        r"chemicals?|gas|pills|tablets).{0,60}(?:fatal|lethal|deadly|would kill|will kill|kill (?:someone|somebody|a person|me|myself)|"
        r"mortel|mortal|mortale|todlich|dodelijk|letal|stop (?:my|the|a|your|his|her) heart)|"
        r"(?:would|will) kill (?:someone|somebody|a person|me|myself) in (?:a|the|their) (?:closed|sealed|small)|"
        r"(?:painless|peaceful|quick|easy) (?:to die|death)|die (?:from|of) an overdose|ways? to die|(?:would|will|to|could) stop (?:your|my|the|his|her) heart|"
        r"(?:on meurt|se muere|stirbt man|morre|si muore|ga je dood|would (?:you|i|someone) die|do you die) (?:\w+ ){0,2}(?:combien de temps|cuanto tiempo|wie lange|quanto tempo|hoe lang|how long|how quickly)|"
        r"how (?:long|quickly) (?:would|does|will) (?:it take (?:to die|to suffocate)|you die|someone die)|"
        r"(?:mata|mate|kills?|tue|totet|uccide|doodt) (?:mais |mas |plus |more |am |piu |het )?(?:rapido|rapide|vite|quickest|fastest|quicker|schnellsten|veloce|snelst)|"
        r"(?:enough|suffisant|suficiente|genug|abbastanza|genoeg|sure) .{0,40}(?:not survive|don't survive|pas survivre|no sobrevivir|nicht uberleb|nao sobreviver|non sopravviv|niet overleef)|"
        r"(?:wie viel|ab wie viel)\w* .{0,50}\btot\b|per andarsene|andarsene per sempre|para irme para siempre|pour partir pour toujours|fur immer (?:gehen|weg)|"
        r"para ir embora para sempre|voor altijd weg|(?:y|and|et|und|e|en) (?:no|not|ne pas|nicht mehr|nao|non|niet meer) (?:volver a )?(?:despertar|wake up|se reveiller|aufwachen|acordar|svegliarsi|wakker(?! te krijgen))|"
        r"car exhaust|exhaust in the garage|nobody could save|no one could save|(?:what|which) (?:number|amount|dose) would (?:it|that) be|"
        r"overdose .{0,40}how many would|"
        r"(?:painless|quickest|easiest|fastest|surest|best|quiet) way to (?:die|kill|end|go)|how (?:to|do you|would i|can i) "
        r"(?:kill (?:my|your)sel|end (?:my|your) life|overdose|od on)|(?:would|will|could) (?:\d+|a (?:whole )?\w+ of) .{0,40}"
        r"(?:kill (?:me|someone|a person)|be enough to die)|enough (?:pills|tablets|insulin|\w+) to (?:die|kill|not wake)|"
        r"dosis (?:letal|mortal)|cantidad (?:letal|mortal)|cuant\w+ .{0,50}(?:para morir|para matar|matan|mataria|mortal|letal)|"
        r"dose (?:letale|mortelle|mortale|letal|fatal)|quantite mortelle|combien .{0,50}(?:pour mourir|mortel|pour (?:me|se) tuer|"
        r"pour ne (?:plus|pas) se reveiller)|todliche (?:dosis|menge)|letale dosis|wie viele?(?! (?:menschen|leute|personen|patienten)) .{0,50}(?:sterben|todlich|"
        r"umbringen|nicht mehr aufwachen)|quant[oa]s .{0,50}(?:morrer|matar|matam|mataria|letal|fatal)|quantidade (?:letal|mortal)|"
        r"quant[ei] .{0,50}(?:morire|uccid|ammazz|mortale|letale)|quantita (?:letale|mortale)|dodelijke (?:dosis|hoeveelheid)|"
        r"hoeveel .{0,50}(?:dood|sterven|dodelijk|niet meer wakker)|" + _LETHAL_GENERAL + ")",
    ),
    # --- medical emergencies ---------------------------------------------------------------------------------
    RedFlag(
        "heart_attack",
        "emergency",
        "chest pain, pressure or tightness now (also atypical: jaw, arm or back pain with sweating, "
        "breathlessness or nausea); a heart attack happening",
        r"(?:(?:crushing|squeezing|tight(?:ness)?|pressure|heavy|heaviness|pain|pains|ache|elephant|burning|discomfort) (?:in|on|across|of) "
        r"(?:\w+ ){0,4}(?:my|his|her|the) chest|chest (?:feels |is |felt )?(?:tight|heavy|crushed|like (?:an elephant|a weight))|(?:going|spreading|moving|radiating|shooting)\w* (?:up |down )?(?:into|to|up into|down) (?:my|his|her) (?:neck|jaw|left arm|arm|back)|"
        r"pain in (?:my|his|her) (?:jaw|left arm)(?: and \w+ \w+)?.{0,80}(?:stairs|exert|walk|not going away|won't go|sweat|clammy|breath)|"
        r"duele\w* (?:\w+ ){0,2}(?:el )?pecho|mal (?:a|dans) la poitrine|(?:tut|tun) (?:\w+ ){0,3}(?:in der )?brust weh|doi (?:\w+ )?o peito|"
        r"(?:fa|fanno) male (?:il|al) petto|male al petto|pijn (?:in|op) (?:de|mijn|zijn|haar) borst|chest (?:pain|pains|pressure|tightness|heaviness|discomfort)|"
        r"(?:having|has|is having|be having|might be having|think (?:he|she|i)'?s? (?:is )?having) a heart attack|"
        r"pain (?:spreading|radiating|going|shooting|moving) (?:up |down )?(?:to|into|down|up) (?:my|his|her|the) "
        r"(?:left )?(?:arm|jaw|neck|shoulder)|(?:jaw|arm) pain .{0,40}(?:sweat|clammy|nause|breath)|"
        r"dolor (?:\w+ )?(?:en el|de|del) pecho|dolor toracico|opresion (?:en el|del) pecho|presion en el pecho|infarto|ataque (?:al|cardiaco)|"
        r"douleur (?:\w+ )?(?:a la|dans la|de) poitrine|douleur thoracique|serrement (?:a la|dans la) poitrine|oppression thoracique|"
        r"crise cardiaque|infarctus|brustschmerz|schmerzen? in der brust|druck (?:auf|in) der brust|engegefuhl|"
        r"enge in der brust|herzinfarkt|dor (?:\w+ )?no peito|aperto no peito|pressao no peito|enfarte|ataque cardiaco|"
        r"dolore (?:\w+ )?al petto|dolore toracico|oppressione al petto|peso sul petto|pijn op de borst|druk op de borst|"
        r"beklemd gevoel|hartaanval|hartinfarct)",
    ),
    RedFlag(
        "stroke",
        "emergency",
        "stroke signs now: face drooping, arm or leg weakness or numbness on one side, slurred or lost speech, "
        "sudden confusion, sudden worst-ever headache",
        r"(?:face (?:is )?(?:droop|drop|sag|twist|lopsid)|(?:droop|sag)\w* (?:on )?(?:one|the left|the right|his|her) (?:side|face|mouth)|"
        r"side of (?:his|her|my) (?:face|mouth) (?:is |has )?(?:droop|drop|sag|gone|went|numb)|"
        r"slurr|(?:can't|cannot|couldn't|unable to) (?:speak|talk|get (?:his|her|my) words out|find (?:his|her|my) words)|"
        r"words (?:are |came out )?(?:jumbled|garbled|muddled)|speech (?:is )?(?:\w+ ){0,3}(?:slurred|garbled|strange|muddled|jumbled|off)|"
        r"(?:can't|cannot) find (?:the|his|her|my) words|(?:right|left) hand .{0,20}(?:weak|numb|won't|can't|doesn't) (?:grip|squeeze|work)?|"
        r"no encuentra las palabras|ne trouve (?:plus )?(?:ses|les) mots|findet (?:keine|die) worte|nao (?:encontra|acha) as palavras|"
        r"non (?:riesce a )?trova(?:re)? le parole|dice cose senza senso|mano .{0,15}non (?:stringe|si muove)|kan (?:geen|de) woorden niet vinden|"
        r"worst headache (?:ever|of (?:my|his|her) life|(?:she|he|i)'?(?:s|ve)? ever had)|(?:headache|pain) (?:that )?came out of nowhere|"
        r"sudden (?:severe|excruciating|explosive) headache|peor dolor de cabeza|pire mal de tete|schlimmsten kopfschmerzen|pior dor de cabeca|"
        r"peggior mal di testa|ergste hoofdpijn|"
        r"(?:can't|cannot|couldn't) (?:lift|raise|move|feel) (?:his|her|my) (?:left |right )?(?:arm|leg|hand)|"
        r"(?:arm|leg|hand|side) (?:suddenly )?(?:went|is|has gone|feels|felt) (?:numb|weak|dead|limp|heavy)|"
        r"(?:sudden|suddenly) .{0,30}(?:weak|numb|paralys|can't (?:see|speak|walk))|"
        r"(?:having|has|is having|might be having|had) a stroke|worst headache of (?:my|his|her) life|thunderclap|"
        r"boca torcida|cara (?:caida|torcida)|no puede hablar|habla (?:rara|arrastrada|mal)|arrastra las palabras|"
        r"no puede (?:mover|levantar) el brazo|derrame cerebral|(?:tiene|tuvo|le (?:dio|da|esta dando)) un derrame|ictus|visage (?:affaisse|tombant|de travers)|bouche de travers|"
        r"n'arrive (?:plus |pas )?a parler|parole (?:pateuse|confuse|bizarre)|ne peut plus (?:parler|bouger)|\bavc\b|"
        r"hangt? (?:der |sein |ihr )?mundwinkel|mundwinkel hangt|verwaschen|lallt|kann (?:den|seinen|ihren) arm nicht|"
        r"schlaganfall|boca torta|fala (?:enrolada|arrastada|estranha)|nao consegue (?:falar|mexer)|(?:tendo|teve) um derrame|"
        r"bocca storta|non riesce a (?:parlare|muovere)|parla (?:male|strano)|scheve mond|mond (?:hangt|scheef)|"
        r"praat (?:\w+ ){0,3}(?:onduidelijk|raar|dubbel)|mondhoek hangt|(?:laat|lets?|drops?|deja caer|laisse tomber|lasst|deixa cair|fa cadere) "
        r"(?:steeds |constantly |keeps? )?(?:dingen|things|las cosas|tout|dinge|as coisas|le cose) (?:vallen|fall|tomber|fallen|cair|cadere)?|"
        r"(?:vendo|ve|veo|voit|sieht|vede|seeing|sees) (?:tudo |todo |tout |alles |tutto |everything )?(?:dobrado|doble|double|doppelt|doppio|dubbel)|"
        r"praat (?:onduidelijk|raar|dubbel)|spreekt onduidelijk|dubbele tong|kan (?:zijn|haar) arm niet|beroerte|herseninfarct)",
    ),
    RedFlag(
        "anaphylaxis",
        "emergency",
        "a severe allergic reaction: throat, tongue or lips swelling, wheeze or faintness after a trigger",
        r"(?:(?:throat|tongue|lips?|mouth|face) (?:is |are |feels? |started |starting )?(?:\w+ )?(?:swell|swollen|closing|tight|puff)|"
        r"(?:gonfiando|hinchando|gonflant|anschwell\w*|inchando|opzwell\w*) (?:\w+ ){0,2}(?:la |le |die |a |de |il )?(?:lingua|lengua|langue|zunge|tong|gola|garganta|gorge|hals|keel)|"
        r"swollen (?:face|lips|tongue|throat)(?: and (?:lips|tongue|face|throat))?|"
        r"swell\w* (?:of|in|on) (?:the |his |her |my )?(?:throat|tongue|lips|face)|anaphyla|"
        r"(?:hincha|cierra) la garganta|garganta (?:cerrada|hinchada)|labios hinchados|lengua hinchada|"
        r"gorge (?:qui (?:gonfle|se serre)|gonflee|serree)|levres gonflees|langue gonflee|"
        r"zunge (?:schwillt|geschwollen)|hals schwillt|schwellung im hals|geschwollene lippen|garganta (?:fechando|inchada|inchando)|"
        r"labios inchados|lingua inchada|gola (?:gonfia|chiusa|che si chiude)|labbra gonfie|lingua gonfia|"
        r"(?:lingua|lengua|langue|zunge|tong|labios|labbra|levres|lippen|garganta|gola|gorge|keel) (?:\w+ ){0,2}(?:inchad|hinchad|"
        r"gonfl|gonfi|geschwoll|gezwollen|opgezwollen)\w*|keel (?:zwelt|dik|zit dicht|dichtgeknepen)|opgezwollen (?:lippen|tong)|dikke lippen|tong zwelt)",
    ),
    RedFlag(
        "breathing",
        "emergency",
        "severe breathing difficulty: cannot breathe or speak in sentences, blue or grey lips, gasping, choking, "
        "an inhaler that does not help",
        r"(?:(?:can't|cannot|can not|couldn't|unable to) (?:breathe|breath|get (?:air|a breath)|catch (?:my|his|her) breath)(?!e?\W*through (?:my|his|her|the|their) nose)|"
        r"not breathing|stopped breathing|struggling (?:to|for) breath|gasping|(?:lips|face|skin) (?:are |is |look |looks |went |turned |turning )?(?:\w+ ){0,2}"
        r"(?:blue|grey|gray|purple)|turning blue|blue lips|can't (?:speak|talk) in (?:full )?sentences|ribs (?:are )?sucking in|"
        r"(?:inhaler|puffer|ventolin|salbutamol|nebuli[sz]er)\w* (?:is |are )?(?:not|isn't|aren't|doesn't|don't|no longer) (?:help|work)|"
        r"choking|stridor|drooling and|(?:tummy|belly|stomach|chest|skin) (?:is )?(?:sucking|pulling|caving|sinking) in|sucking in (?:under|between) (?:her|his|the) ribs|"
        r"ribs (?:are )?(?:showing|sucking|pulling)|too (?:breathless|out of breath|short of breath) to (?:talk|speak|eat|walk)|"
        r"(?:high.pitched|whistling|strange|weird|funny) (?:noise|sound|whistle|squeak)\w* (?:when|as) (?:she |he |they )?(?:breath|breathes|breathing|takes? a breath)|"
        r"can barely (?:talk|speak|breathe)|nao consigo falar (?:uma )?frase|no puedo (?:ni )?hablar|ne (?:peux|peut) (?:pas|plus) parler|kann kaum sprechen|"
        r"non riesc\w* a parlare|kan (?:bijna )?niet (?:meer )?praten|(?:oximet\w*|sats?|saturation|spo2|oxygen|saturacion|saturation|sattigung|saturacao|saturazione|saturatie) "
        r"(?:\w+ ){0,3}(?:8\d|7\d|6\d|9[01])\b|(?:\d+|ten|several|many|lots of) puffs .{0,60}(?:not|isn't|doesn't|no longer) (?:help|work)|"
        r"(?:spray|salbutamol|inhalator|asthmaspray|ventolin|pompe|inhalador|bombinha|pufje|puffer) (?:\w+ ){0,2}(?:hilft nicht|ne marche pas|no (?:le )?(?:hace|funciona|ayuda)|"
        r"nao (?:esta )?(?:ajuda|funciona)|non (?:funziona|aiuta)|helpt niet)|lippen (?:\w+ )?(?:blau|blaulich)|"
        r"falta (?:el )?aire|se le hunde el pecho|silbido agudo|respira (?:muy )?mal|respire (?:tres )?mal|tirage|atmet (?:sehr )?schwer|einziehungen|"
        r"respira com dificuldade|tiragem|respira male|rientramenti|ademt (?:heel )?moeilijk|intrekkingen|"
        r"no puede respirar|se (?:esta )?ahoga|labios (?:morados|azules)|se asfixia|"
        r"n'arrive (?:pas|plus) a respirer|ne peut (?:pas|plus) respirer|s'etouffe|etouffe|levres bleues|suffoque|"
        r"bekommt keine luft|kriegt keine luft|blaue lippen|erstickt|ringt nach luft|nao consegue respirar|labios roxos|"
        r"sufocando|sufoca|engasgad|non riesce a respirare|labbra (?:blu|viola)|soffoca|kan niet (?:meer )?ademen|"
        r"krijgt geen lucht|blauwe lippen|hapt naar (?:adem|lucht)|stikt)",
    ),
    RedFlag(
        "bleeding",
        "emergency",
        "bleeding that will not stop, heavy bleeding, vomiting or coughing blood, black tarry stools",
        r"(?:bleed\w* (?:that |which )?(?:won't|will not|doesn't|does not|wont|isn't|can't|hasn't) (?:stop|stopp)|bleeding (?:non.?stop|for (?:\d+|two|three|four|five|six) hours)|non.?stop bleeding|"
        r"gone through (?:\w+ ){0,3}(?:gauze|pads|towels|tampons)|a fiotti|a chorros|en jet|spritzt|jorrando|tantissimo sangue|muchisima sangre|"
        r"enormement de sang|sehr viel blut|muito sangue|heel veel bloed|si inzuppa|se empapa|durchgeblutet|encharca|still spurting|soaked through|"
        r"nosebleed (?:\w+ ){0,4}(?:over an hour|an hour|hours|won't stop|not stopping)|"
        r"won't stop bleeding|(?:can't|cannot) stop (?:the )?bleed|bleeding (?:heavily|badly|a lot|everywhere|through)|"
        r"(?:heavy|lots of|a lot of|so much|pool of|gushing|spurting) blood|blood (?:is )?(?:spurting|gushing|pouring|everywhere)|"
        r"soak\w* (?:through )?(?:a |the )?(?:pad|towel|bandage|tea towel)|(?:vomit|throw|threw|puk|cough)\w* (?:up )?blood|"
        r"blood in (?:his|her|my) (?:vomit|sick)|(?:black|tarry) (?:tarry |sticky )?(?:stool|poo|poop)|coffee.grounds|"
        r"(?:caca|heces|deposiciones|selles|stuhl|fezes|coco|feci|ontlasting|poep) (?:\w+ ){0,2}(?:negr|noir|schwarz|pret|ner|zwart)\w*|"
        r"alquitran|goudron|teerstuhl|piche|"
        r"no (?:para|deja) de sangrar|sangra (?:mucho|sin parar|a chorros)|vomit\w* sangre|hemorragia|"
        r"n'arrete pas de saigner|saigne (?:beaucoup|abondamment|sans arret)|vomi\w* du sang|hemorragie|"
        r"hort nicht auf zu bluten|blutet (?:stark|sehr|ohne)|blut erbrochen|erbricht blut|spuckt blut|"
        r"nao para de sangrar|sangra(?:ndo)? muito|vomit\w* sangue|non smette di sanguinare|sanguina (?:molto|tanto)|"
        r"vomit\w* sangue|emorragia|blijft bloeden|stopt niet met bloeden|bloedt (?:hevig|erg|heel veel)|bloed (?:overgeven|braken|opgeven))",
    ),
    RedFlag(
        "pregnancy",
        "emergency",
        "pregnancy with heavy bleeding, severe abdominal or shoulder-tip pain, severe headache with vision "
        "changes or swelling, fits, or a baby moving less",
        _PREGNANT,
        (
            r"(?:blood(?! pressure| sugar| test| count| thinner| type| group)|bloed\b|blut\b|sangue\b|sangre\b|\bsang\b|cord|cordon|cordao|nabelschnur|cordone|navelstreng|"
            r"(?:hasn't|has not|not|isn't|no se|ne bouge|bewegt sich nicht|nao mexe|non si muove|beweegt niet|niet meer bewegen|nicht mehr bewegt) (?:\w+ ){0,2}(?:moved|moving|mueve|bouge|bewegt|mexe|muove|beweegt)|"
            r"bleed|blood (?:loss|clots|everywhere|coming)|(?:losing|passing|lost) (?:\w+ )?blood|clots|severe (?:pain|cramp|headache)|(?:really|very|extremely) (?:bad|painful|strong) (?:pain|cramp)|"
            r"agony|doubled over|shoulder.tip|seeing (?:spots|stars|flashing)|blurr|flashing lights|(?:face|hands) (?:very )?swollen|"
            r"fit\b|seizure(?!s? ?-?free)|(?:not|hasn't|stopped) moving|moving less|stabbing|sharp pain|feel faint|fainted|pass(?:ed)? out|shoulder (?:tip|hurts|pain)|"
            r"(?:1[4-9]\d|2\d\d) ?/ ?(?:9\d|1\d\d)|sternchen|sterretjes|estrellitas|etoiles|estrelinhas|stelline|mouches|under (?:my|the) ribs|unter den rippen|sous les cotes|debajo de las costillas|no movement|reduced movement|waters? (?:broke|broken) .{0,40}green|"
            r"sangrado|sangrando|sangrar|sangra\b|sangre|borros|vision floue|verschwommen|embacad|turva|offuscat|wazig|hinchad|tres gonfle|stark geschwollen|"
            r"muito inchad|molto gonfi|erg opgezwollen|(?:bad|severe|really bad|terrible|awful|worst) headache|duele mucho la cabeza|mal de tete (?:intense|violent)|"
            r"starke kopfschmerzen|dor de cabeca (?:forte|muito forte)|forte mal di testa|hevige hoofdpijn|swelled up|swollen (?:face|hands)|"
            r"coagulos|caillots|blutgerinnsel|coagul|stolsels|colica muito forte|dolor (?:fuerte|intenso|muy fuerte)|saign|douleur (?:intense|violente|tres forte)|"
            r"blutung|blutet|blut verlier|starke schmerzen|sangue\b|perdendo sangue|dor (?:forte|intensa)|sanguin(?:a|amento)\b|"
            r"dolore (?:forte|intenso)|bloeding|bloedt|bloedverlies|hevige pijn|erge pijn|krampen)",
        ),
    ),
    RedFlag(
        "infant_fever",
        "emergency",
        "fever (38 °C or more) in a baby under three months",
        FEVER,
        (_INFANT_AGE,),
    ),
    RedFlag(
        "meningitis",
        "emergency",
        "meningitis or sepsis signs: a rash that does not fade under a glass, stiff neck with fever, purple spots",
        r"(?:rash (?:that |which )?(?:doesn't|does not|won't|didn't|isn't) (?:fade|go away when|blanch|disappear)|"
        r"glass test|non.?blanching|purple (?:spots|rash|blotches|dots)|petechia|purpura|meningit|"
        r"manchas (?:moradas|que no desaparecen)|taches (?:violettes|pourpres)|"
        r"(?:doesn't|don't|do not|won't|didn't) (?:fade|disappear|go away) (?:when|under|with|if) (?:\w+ )?(?:press|push|a glass|pressure)|no desaparecen al (?:apretar|presionar)|"
        r"ne (?:disparaissent|s'effacent) pas|verschwinden nicht|nao (?:desaparecem|somem)|non scompaiono|verdwijnen niet|(?:manchas|manchitas|puntos|puntitos) morad|"
        r"ausschlag,? der nicht verschwindet|manchas roxas|macchie (?:viola|rosse che non)|paarse vlek)",
    ),
    RedFlag(
        "neck_stiffness_fever",
        "emergency",
        "a stiff neck or light hurting the eyes with fever, severe headache or drowsiness (meningitis)",
        r"(?:(?:stiff|rigid) neck|neck (?:is )?(?:stiff|rigid)|can't (?:bend|touch) (?:his|her|my) (?:chin|neck)|light hurts|"
        r"rigidez (?:de|en la) nuca|cuello rigido|nuque raide|nackensteif|steifer nacken|genickstarre|nackenstarre|rigidez na nuca|"
        r"pescoco (?:rigido|duro)|rigidita nucale|collo rigido|stijve nek|nekstijfheid|nacken nicht (?:\w+ )?beugen|"
        r"(?:cuello|cou|pescoco|collo|nek) (?:\w+ ){0,3}(?:no (?:lo )?puede doblar|plier|dobrar|piegare|buigen)|"
        r"licht tut (?:ihm|ihr|mir) weh|la luz le molesta|lumiere (?:lui )?fait mal|luz (?:incomoda|doi)|la luce (?:gli|le) da fastidio|licht doet pijn)",
        (
            r"(?:"
            + FEVER
            + r"|headache|kopfschmerz|dolor de cabeza|mal de tete|dor de cabeca|mal di testa|hoofdpijn|drowsy|confus|wirr|rash)",
        ),
    ),
    RedFlag(
        "sepsis",
        "emergency",
        "fever or feeling very unwell with confusion, drowsiness, mottled or cold skin, very fast breathing; "
        "sepsis or heat stroke suspected",
        r"(?:sepsis|septic|mottled|blotchy (?:blue|grey|pale)|heat ?stroke|golpe de calor|coup de chaleur|hitzschlag|"
        r"insolacao|colpo di calore|zonnesteek|hitteberoerte|" + _CONFUSED + r")",
        (
            r"(?:"
            + FEVER
            + r"|sepsis|septic|infection|infected|mottled|very hot|not sweating|heat|hot to touch|caliente|chaud|"
            r"heiss|quente|caldo|heet|shivering|rigors|shaking uncontrollably|escalofrios|frissons|schuttelfrost|calafrios|brividi|koude rillingen)",
        ),
    ),
    RedFlag(
        "chemo_fever",
        "emergency",
        "fever or shivering during chemotherapy (neutropenic sepsis)",
        r"(?:chemo|chemio|quimio|chimio|chemotherap|quimioterap|chemioterap|chemokuur)",
        (
            r"(?:"
            + FEVER
            + r"|shivering|rigors|shaking|chills|frissons|escalofrios|schuttelfrost|calafrios|brividi|rillingen)",
        ),
    ),
    RedFlag(
        "dka",
        "emergency",
        "diabetic ketoacidosis or a severe hypo: high ketones, vomiting, deep fast breathing, fruity breath, "
        "drowsiness or confusion in someone with diabetes",
        r"(?:ketoacidosis|\bdka\b|ketones? (?:are |is )?(?:high|large|\d)|(?:high|large) ketones|fruity|pear drops|nail polish|"
        r"(?:sugar|glucose|bg|meter) (?:reads |reading |says |is |of )?(?:hi\b|high\b|over 2\d|[3-9]\d(?:[.,]\d)? mmol|[4-9]\d\d\b)|"
        r"(?:sugar|glucose) .{0,20}(?:[1-2][.,]\d|low) .{0,40}(?:confus|drowsy|unconscious|won't wake|fitting|seiz|can't swallow)|"
        r"(?:ketone|ketonen|cetonas|cetones|chetoni)\w* (?:\w+ ){0,2}(?:high|hoog|altas|elevees|hoch|alti|elevad|erhoht|verhoogd)|diep en snel|"
        r"(?:azucar|glucosa|glucemia|glycemie|blutzucker|zucker|acucar|glicemia|zucchero|suiker|bloedsuiker) .{0,15}(?:\bhi\b|muy alta|tres elevee|sehr hoch|muito alta|altissim|heel hoog|[4-9]\d\d\b)|"
        r"(?:breathing|respira|respire|atmet|ademt) (?:very |muy |tres |sehr |muito |molto |heel )?(?:fast and deep|deep and fast|rapido y profundo|"
        r"vite et profond|schnell und tief|rapido e profundo|veloce e profondo|snel en diep)|vomit\w* (?:all night|toda la noche|toute la nuit)|"
        r"(?:erbricht|erbrochen) die ganze nacht|vomit\w* (?:a noite toda|tutta la notte)|de hele nacht overgeven|"
        r"cetoacidosis|cetonas (?:altas|elevadas)|acidocetose|cetones (?:elevees|hautes)|ketoazidose|ketone (?:hoch|erhoht)|"
        r"cetoacidose|cetonas altas|chetoacidosi|chetoni (?:alti|elevati)|ketoacidose|ketonen (?:hoog|verhoogd))",
        (
            r"(?:diabet|type 1|type one|t1d|insulin|glucose|sugar|suiker|zucker|azucar|acucar|zucchero|glicemia|glucemia|glykamie)",
        ),
    ),
    RedFlag(
        "head_injury",
        "emergency",
        "a head injury on blood thinners, or with vomiting, drowsiness, confusion, a fit or loss of consciousness",
        _HEAD_HIT,
        (
            _HEAD,
            r"(?:"
            + _THINNER
            + r"|vomit|threw up|throwing up|sick (?:twice|again|several)|drowsy|knocked out|unconscious|"
            r"passed out|blacked out|confus|seizure|fit\b|clear fluid|vomit|vomito|vomi|erbrochen|erbricht|vomitou|vomita|"
            r"overgeven|braken|bewusstlos|inconscient|bewusteloos|suf|benommen|somnolent|sonolent|sonnolent)",
        ),
    ),
    RedFlag(
        "pulmonary_embolism",
        "emergency",
        "pulmonary embolism signs: sudden breathlessness or sharp chest pain, coughing blood, with a swollen "
        "painful calf or after surgery, a long flight or on the pill",
        r"(?:(?:calf|leg) (?:is |has been |got |became |went )?(?:swollen|swelling|red and|painful|hot and|tender)|"
        r"swollen (?:calf|leg)|clot in (?:my|his|her|the) lungs?|pulmonary embol|pantorrilla hinchada|pierna hinchada|"
        r"mollet (?:gonfle|douloureux)|jambe gonflee|wade (?:geschwollen|dick)|geschwollenes bein|panturrilha inchada|"
        r"perna inchada|polpaccio gonfio|gamba gonfia|kuit (?:dik|gezwollen)|dik been|embolia pulmonar|embolie pulmonaire|"
        r"lungenembolie|embolia polmonare|longembolie)",
        (
            r"(?:"
            + _BREATHLESS
            + r"|chest|sharp pain (?:when|on) breath|cough\w* (?:up )?blood|pecho|poitrine|brust|peito|petto|borst)",
        ),
    ),
    RedFlag(
        "seizure",
        "emergency",
        "a seizure lasting more than five minutes, one after another, a first fit, or not waking up after one",
        r"(?:seizure|fitting|having a fit|convuls|krampfanfall|anfall|krampft|crise (?:d'epilepsie|convulsive)|convulsion|"
        r"convulsao|convulsione|attacco epilettico|epileptische aanval|stuip|aanval)",
        (
            r"(?:won't stop|not stopp|hasn't stopped|still (?:fitting|shaking|going|seizing)|for (?:over |more than )?"
            r"(?:[5-9]|\d\d|five|ten|fifteen|twenty) min|one after (?:another|the other)|back to back|keeps having|"
            r"(?:hasn't|not|won't) (?:woken|waking|wake|come round|coming round)|first (?:ever )?(?:seizure|fit)|never had (?:one|a seizure)|"
            r"no para|sigue|no despierta|ne s'arrete pas|dure depuis|ne se reveille pas|hort nicht auf|seit (?:\d+|funf|zehn) minuten|"
            r"wacht nicht auf|nao para|nao acorda|non si ferma|non smette|non si sveglia|stopt niet|houdt niet op|wordt niet wakker|"
            r"(?:[5-9]|\d\d|cinco|diez|cinq|dix|funf|zehn|dez|dieci|vijf|tien) (?:minutos|minutes|minuten|minuti))",
        ),
    ),
    RedFlag(
        "vision_loss",
        "emergency",
        "sudden loss of vision, a curtain or shadow over the sight, sudden double vision",
        r"(?:(?:sudden|suddenly|all of a sudden|overnight|this morning|just now|an hour ago) .{0,40}(?:lost|loss of|can't see|cannot see|"
        r"blind|went black|went dark|double vision)|(?:lost|losing) (?:the )?(?:vision|sight)|(?:curtain|shadow|veil|shade) "
        r"(?:came |come |coming |moving |has come |is )?(?:down |across |over |up )|can't see (?:out of|anything|with)|"
        r"(?:ziet|zie|sees?|see|can't see|ve|voit|sieht|vede) (?:\w+ ){0,2}(?:niks|niets|nothing|nada|rien|nichts|niente|black) (?:meer )?(?:met|out of|with|de|d'|aus|com|da|con|in)\b|"
        r"perdi\w* (?:la|de la) vision|ve (?:todo )?negro|cortina|perdu la vue|voile (?:noir|sombre)|rideau|sehe (?:plotzlich )?nichts|"
        r"plotzlich blind|vorhang|perdi a visao|perdeu a visao|ficou cego|perso la vista|non vedo|non vede piu|tenda nera|"
        r"zie (?:ineens )?niets|plots(?:eling)? blind|gordijn|zwarte vlek)",
    ),
    RedFlag(
        "testicular_torsion",
        "emergency",
        "sudden severe pain or swelling of a testicle",
        r"(?:testic|testes|scrot|\bballs\b|(?:his|my) ball\b|(?:zijn|mijn) bal\b|hoden|testiculo|testicolo|teelbal|zaadbal)",
        (
            r"(?:sudden|severe|agony|excruciating|really bad|swollen|swelling|throb|vomit|repente|fuerte|soudain|violente|"
            r"plotzlich|starke|de repente|forte|improvvis|forte|plotseling|hevig|ineens|vreselijk|erge)",
        ),
    ),
    RedFlag(
        "swallowed_hazard",
        "emergency",
        "a child (or anyone) swallowed a button battery, magnets, a cleaning or caustic product, or medicine "
        "that is not theirs",
        _SWALLOW,
        (
            r"(?:batter|button cell|coin cell|magnet|bleach|drain cleaner|dishwasher|washing.?up liquid|fabric softener|cleaner\b|detergent|laundry "
            r"(?:pod|capsule|liquid)|washing (?:pod|capsule|powder|tablet)|tide pod|cleaning (?:product|spray|fluid)|antifreeze|"
            r"oven cleaner|caustic|lye|descaler|toilet cleaner|white spirit|paraffin|lamp oil|e-?liquid|vape (?:juice|liquid)|"
            r"nicotine|weed killer|rat poison|pesticide|iron tablets|grandma'?s? (?:pills|tablets)|pila|bateria|iman|lejia|cloro|"
            r"detergente|desatascador|lessive|javel|eau de javel|pile\b|aimant|batterie|knopfzelle|magnet|bleichmittel|reiniger|"
            r"spulmaschinentab|waschmittel|agua sanitaria|lixivia|soda caustica|ima\b|batteria|calamita|magnete|candeggina|"
            r"varechina|detersivo|batterij|knoopcel|magneet|bleek|chloor|ontstopper|vaatwas|wasmiddel|schoonmaakmiddel|"
            r"spuelmaschinen\w*|"
            # a medicine by the bottle or the box: "a bu presque tout le flacon de doliprane"
            r"(?:whole|entire|tout le|toute la|todo el|toda la|die ganze|den ganzen|o frasco|a caixa|tutto il|tutta la|"
            r"de hele|het hele) (?:\w+ ){0,2}(?:bottle|flacon|boite|bote|frasco|caja|flasche|packung|caixa|flacone|"
            r"confezione|fles|doos|pack|box|blister|strip))",
        ),
    ),
    RedFlag(
        "overdose_poisoning",
        "emergency",
        "an overdose or poisoning that has just happened (too many tablets, a whole pack, mushrooms, "
        "alcohol with pills, someone else's medicine)",
        r"(?:(?:took|taken|had|has|have|did|done|just|is having|on an) (?:an? )?overdos|overdosed|overdose (?:on|of) (?:his|her|my)|\bod'?d\b|took (?:a |an )?(?:whole|entire|full)|"
        r"\b(?:[5-9]|[1-9]\d)(?:[.,]\d)? ?(?:g|gr|grams?|gramm|gramos|grammes?|grammi)\b .{0,20}(?:paracetamol|acetaminophen|tylenol|panadol|paracetamolo)|"
        r"\b(?:1[2-9]|[2-9]\d|\d{3})\s+(?:(?!and\b|years?\b|yrs?\b|yo\b|ans\b|anos\b|jahre\b|anni\b|jaar\b|kg\b|mg\b|takes?\b|neemt\b|nimmt\b|toma\b|prend\b|prende\b)\w+\s+){0,2}(?:paracetamol|tylenol|panadol|pills|tablets|tabletten|pillen|pastillas|comprimidos|cachets|comprimes|compresse|pastiglie|stuck|stuk)\b|"
        r"(?:paracetamol|acetaminophen|tylenol|panadol) .{0,100}\b(?:1[6-9]|[2-9]\d)\b (?:so far|in total|altogether|a day)|"
        r"(?:on purpose|di proposito|a proposito|expres|absichtlich|de proposito|met opzet|intentionally|deliberately)|"
        r"(?:much |viel |veel |mucho |beaucoup |molto |muito )?(?:more than|mehr als|meer dan|mas de lo|plus que|piu del|mais do que) (?:the )?(?:allowed|erlaubt|toegestaan|permitido|permis|consentito|maximum|max|recommended|"
        r"la dose|die hochstdosis)|injected (?:\d{2,}|double|twice|too much|the wrong)\b.{0,20}(?:units|insulin)|"
        r"(?:took|taken|swallowed|has had|given (?:him|her)) "
        r"(?:all|the whole|the rest|a (?:whole |full )?(?:bottle|pack|box|packet|strip|handful|load|bunch)|\d{2,}|too many|lots of|a lot of|loads of|"
        r"twenty|thirty|forty|fifty|dozens?|(?:double|triple|twice|ten times|10 times) (?:the|his|her|my)) |"
        r"poison(?:ed|ing)|accidental(?:ly)? (?:took|swallowed|drank|gave)|intoxica|envenen|sobredosis|se tomo (?:todas|toda|un|una)|"
        r"(?:ha tomado|tomo|se ha tomado) (?:todas|toda|un bote|una caja|un blister|\d{2,})|empoisonn|surdose|a pris (?:toute|tout|une boite|"
        r"une plaquette|\d{2,})|uberdosis|vergift|(?:hat|habe) .{0,30}(?:alle|eine ganze|die ganze|\d{2,}) .{0,30}(?:genommen|geschluckt)|"
        r"sobredosagem|tomou (?:todos|todas|uma caixa|uma cartela|\d{2,})|sovradosaggio|avvelen|intossica|ha preso (?:tutte|tutto|"
        r"una scatola|un blister|\d{2,})|overdosis|(?:heeft|nam) .{0,30}(?:alle|een hele|een heel|\d{2,}) .{0,30}(?:genomen|ingenomen|geslikt)|"
        r"paddos|magic mushrooms|champignons|setas|pilze|cogumelos|funghi)",
    ),
    RedFlag(
        "carbon_monoxide",
        "emergency",
        "carbon monoxide: an alarm going off, or headaches, dizziness or sleepiness in several people at home",
        r"(?:carbon monoxide|\bco (?:alarm|detector|poison|leak)|(?:everyone|all of us|whole family|the whole house)\b.{0,160}(?:boiler|gas fire|heater|stove|generator)|(?:yellow|orange) flames?|flames? (?:is |are )?(?:yellow|orange)|llama amarilla|"
        r"flamme jaune|gelbe flamme|chama amarela|fiamma gialla|gele vlam|co-?melder|(?:chauffage|poele|estufa|brasero|gaskachel|gas heater|gas fire) .{0,80}(?:toute la famille|toda la familia|die ganze familie|toda a familia|tutta la famiglia|het hele gezin|iedereen|all of us|everyone|whole family|tout le monde)|monoxido de carbono|monoxyde de carbone|kohlenmonoxid|"
        r"monossido di carbonio|koolmonoxide|(?:gas|boiler|heater|stove|fire|generator|barbecue|bbq|kachel|geiser|caldera|"
        r"chaudiere|heizung|therme|caldeira|caldaia|stufa).{0,80}(?:all (?:of us|have|got)|everyone|whole family|both|the kids|"
        r"headaches?|dizzy|drowsy|sleepy|nause|sick|todos|tous|alle|tutti|iedereen))",
        (
            r"(?:alarm (?:is |has been |keeps )?(?:going off|beeping|sounding|went off)|beeping|headache|dizzy|drowsy|sleepy|nause|sick|faint|confus|dolor de cabeza|mareo|mal de tete|mal a la tete|evanoui|vertige|"
            r"kopfschmerz|schwindel|dor de cabeca|tontura|mal di testa|vertigini|hoofdpijn|duizelig|misselijk|alarme|allarme)",
        ),
    ),
    RedFlag(
        "unresponsive",
        "emergency",
        "someone unconscious, unresponsive, who cannot be woken, or who collapsed",
        r"(?:unconscious|unresponsive|(?:won't|will not|can't|cannot|couldn't|not) (?:wake|waking|rouse|respond)|"
        r"(?:isn't|not|is not) (?:responding|waking)|collapsed|passed out and|(?:no|can't find a) pulse|limp and|floppy|"
        r"inconsciente|no responde|no (?:se )?despierta|desplomo|inconscient|ne repond (?:pas|plus)|ne se reveille pas|"
        r"effondre|bewusstlos|reagiert nicht|nicht (?:mehr )?ansprechbar|wacht nicht auf|zusammengebrochen|nao responde|"
        r"nao acorda|desmaiou e|privo di sensi|incosciente|non risponde|non si sveglia|accasciat|bewusteloos|"
        r"reageert niet|wordt niet wakker|in elkaar gezakt)",
    ),
    RedFlag(
        "severe_pain",
        "emergency",
        "sudden severe pain: tearing chest or back pain, severe abdominal pain with a rigid belly, fever or "
        "vomiting, a painful erection lasting hours, back pain with numbness in the saddle area or loss of "
        "bladder control",
        r"(?:(?:tearing|ripping) (?:pain|sensation)|(?:severe|worst|excruciating|unbearable|agonising|agonizing|terrible) .{0,20}"
        r"(?:stomach|abdominal|belly|tummy|abdomen) (?:pain|ache)|(?:belly|stomach|abdomen|tummy) (?:is )?(?:rigid|hard as a board|"
        r"board.like)|(?:erection|priapism).{0,40}(?:hours|won't go|will not go)|(?:numb|no feeling) (?:between|around|in) "
        r"(?:my|his|her|the) (?:legs|bum|buttocks|groin|genitals|saddle)|saddle (?:numbness|anaesthesia|anesthesia)|"
        r"(?:can't|cannot) (?:pee|urinate|control (?:my|his|her) (?:bladder|bowels))|"
        r"dolor (?:abdominal|de (?:barriga|estomago|tripa)) (?:insoportable|muy fuerte|terrible)|vientre (?:duro|rigido)|"
        r"douleur (?:abdominale|au ventre) (?:insupportable|atroce|violente)|ventre (?:dur|de bois)|"
        r"(?:unertragliche|starkste|heftige) (?:bauch|unterbauch)schmerzen|bauch (?:ist )?(?:bretthart|hart)|"
        r"dor (?:abdominal|na barriga) (?:insuportavel|muito forte)|barriga dura|dolore (?:addominale|alla pancia) (?:insopportabile|fortissimo)|"
        r"pancia dura|(?:ondraaglijke|hevige|vreselijke) buikpijn|buik (?:is )?(?:keihard|hard als)|(?:tripa|barriga|panza|ventre|bauch|pancia|buik) (?:esta |est |ist |e |is )?(?:muy )?dura?\b)",
    ),
    RedFlag(
        "dehydrated_or_unwell_infant",
        "emergency",
        "a baby or young child who is floppy, hard to wake, not feeding, with no wet nappies, a sunken soft "
        "spot, a high-pitched cry, or breathing with grunting or ribs sucking in",
        r"(?:no wet (?:nappies|nappy|diapers?)|(?:hasn't|has not|not) (?:peed|wee'?d|had a wet)|dry (?:nappies|nappy|diapers?) (?:for|since)|"
        r"sunken (?:soft spot|fontanel)|soft spot (?:is )?sunken|high.pitched (?:cry|scream)|grunting|(?:won't|not|isn't|refus\w*) "
        r"(?:feed|feeding|drink|drinking|eat|eating)(?: anything)?.{0,40}(?:floppy|drowsy|sleepy|limp|listless|hours|all day)|"
        r"(?:nao fez|no ha hecho|pas fait|kein|non fa|niet) (?:xixi|pis|pipi|plas)|fontanell?a (?:\w+'? ){0,2}(?:infossata|incavata|hundida|afundada)|"
        r"(?:non bagna|no moja|ne mouille pas|nao molha|geen natte|keine nasse) (?:\w+ ){0,2}(?:pannolino|panal|couche|fralda|luier|windel)|"
        r"(?:senza|sin|sans|ohne|sem|zonder|without) (?:lacrime|lagrimas|larmes|tranen|tears)|moleira (?:afundada|funda)|panal\w* sec|fontanela hundida|couches? seches?|fontanelle creuse|keine nassen windeln|eingesunkene fontanelle|"
        r"fralda\w* seca|moleira funda|pannolin\w* asciutt|fontanella (?:infossata|incavata)|droge luiers|ingevallen fontanel)",
        (
            r"(?:baby|babies|infant|newborn|toddler|month|months|week|weeks|bebe|nourrisson|saugling|baby|neonato|bambin|kindje|zuigeling|meses|mois|monat|mesi|maanden)",
        ),
    ),
    RedFlag(
        "severe_burn_or_injury",
        "emergency",
        "a serious injury: an electric shock, a large or facial burn, a deep wound, a bone through the skin, "
        "a near-drowning, a fall from a height",
        r"(?:electric shock|electrocut|shock from the mains|mains (?:shock|electricity)|bone (?:is )?(?:sticking|poking|through)|(?:deep|gaping) (?:cut|wound|gash)|"
        r"(?:nearly|almost) drown|pulled (?:him|her) out of the (?:pool|water)|fell (?:from|off) (?:a |the )?(?:roof|ladder|balcony|"
        r"window|second floor|height)|(?:burn|scald)\w* (?:on|to|over) (?:his|her|my) (?:face|whole|chest|back)|chemical (?:in|splash)"
        r".{0,20}eye|descarga electrica|electrocut|decharge electrique|stromschlag|choque eletrico|scossa elettrica|"
        r"elektrische schok|casi se ahoga|a failli se noyer|fast ertrunken|quase se afogou|quasi annegat|bijna verdronken)",
    ),
    RedFlag(
        "serious_burn",
        "emergency",
        "a large, deep or facial burn: a whole hand or limb, white or charred skin that does not hurt, huge "
        "blisters, a burn on the face or airway",
        r"(?:burn|burnt|scald|quem|brul|verbrann|verbrenn|verbruh|queim|bruciat|ustion|scottat|verbrand|brandwond|boiling (?:water|oil)|"
        r"hot (?:water|oil|tea|coffee) (?:over|on)|agua hirviendo|aceite hirviendo|eau bouillante|huile bouillante|kochendes (?:wasser|ol)|"
        r"agua fervendo|oleo fervendo|acqua bollente|olio bollente|kokend (?:water|olie|heet))",
        (
            r"(?:whole|entire|all over|large|huge|big|enorme|grosse|riesig|grande|enorm|blister\w*|peeling|skin (?:is )?(?:coming|peeling) off|(?:is|are|look|looks|parts?|skin) "
            r"(?:\w+ )?white|blanch|weiss|branca|bianc|\bwit\b|charred|leathery|(?:doesn't|don't|no (?:me )?) (?:hurt|duelen|duele)|"
            r"ne (?:me )?fait (?:pas|plus) mal|tut nicht weh|nao doi|non (?:mi )?fa male|doet geen pijn|(?:face|cara|visage|gesicht|rosto|"
            r"viso|gezicht) |ampollas enormes|blisters? (?:the size|bigger|as big|huge|everywhere))",
        ),
    ),
    RedFlag(
        "appendicitis",
        "emergency",
        "abdominal pain moving to the lower right, with fever, vomiting or pain on walking",
        r"(?:lower right|right lower|bottom right|right side of (?:my|his|her) (?:tummy|belly|stomach|abdomen)|"
        r"abajo a la derecha|lado derecho|en bas a droite|cote droit|rechts unten|unten rechts|rechten unterbauch|em baixo a direita|"
        r"lado direito|in basso a destra|fianco destro|rechtsonder|rechts onder|rechterkant)",
        (
            r"(?:pain|ache|dolor|douleur|schmerz|dor\b|dolore|pijn|duele|hurts)",
            r"(?:"
            + FEVER
            + r"|vomit|throw\w* up|sick|can't (?:walk|stand)|(?:walk|stand)\w* (?:bent|hunched)|getting worse|worse|"
            r"no puedo (?:ni )?caminar|muy fuerte|severe|really bad|agony|vomito|vomi|erbrech|vomitando|vomita|overgeven|braken)",
        ),
    ),
    RedFlag(
        "cardiac_atypical",
        "emergency",
        "sweating or clamminess with breathlessness, faintness, or chest, jaw or arm discomfort (an atypical "
        "heart attack, especially in diabetes, women and older people)",
        r"(?:clammy|cold sweat|sweaty|sweating and|sweating (?:buckets|heavily|profusely|a lot)|drenched in sweat|pouring (?:with )?sweat|"
        r"suda(?:ndo)? (?:mucho|frio)|sudor frio|sueurs? froides?|transpire (?:beaucoup|a grosses gouttes)|kalter schweiss|"
        r"schwitzt (?:stark|sehr)|suor frio|suando (?:muito|frio)|sudore freddo|suda (?:molto|freddo)|koud zweet|zweet (?:heel erg|hevig))",
        (
            r"(?:"
            + _BREATHLESS
            + r"|pass out|faint|chest|jaw|left arm|grey|gray|pecho|aire|desmay|poitrine|evanou|malaise|brust|"
            r"ohnmacht|peito|desmai|petto|svenire|borst|flauw)",
        ),
    ),
    RedFlag(
        "allergic_reaction",
        "emergency",
        "an allergic reaction with wheeze, breathing trouble, swelling, hives all over or faintness",
        r"(?:allerg|inyecc|injection|spritze|injec|iniezion|antibiot|penicil|amoxic|contrast dye|nuts?\b|peanut|cashew|shellfish|prawn|shrimp|bees?\b|wasps?\b|sting|stung|epi-?pen|adrenaline (?:pen|auto)|"
        r"noix|cacahuete|arachide|stylo (?:d')?adrenaline|abeille|guepe|nueces|cacahuete|mani|abeja|avispa|nusse|erdnuss|"
        r"biene|wespe|adrenalin|amendoim|castanha|abelha|vespa|noci|arachidi|ape\b|pinda|noten|bij\b|wesp|adrenaline)",
        (
            r"(?:wheez|sifflement|respire mal|(?:hard|trouble|difficult\w*|struggl\w*) (?:to )?breath|pfeif|chiado|fischio|piep|"
            r"(?:hives|rash|plaques|urticaria|ronchas|quaddeln|manchas|pomfi|bulten)\w* (?:\w+ ){0,3}(?:everywhere|all over|partout|"
            r"por todo|uberall|por todo o corpo|dappertutto|overal)|(?:lips?|tongue|throat|face|eyes?) (?:\w+ )?(?:swell|swollen|puff)|"
            r"(?:face|lips?|tongue|throat|eyes?|cara|labios|lengua|garganta|visage|levres|langue|gorge|gesicht|lippen|zunge|hals|rosto|lingua|viso|labbra|gola|gezicht|tong|keel) "
            r"(?:\w+ ){0,2}(?:swell|swollen|hinch|gonfl|geschwollen|schwill|inchad|gonfi|opgezwollen|dik)|voz ronca|voix rauque|heiser|rouca|rauca|hees|hoarse|"
            r"(?:(?:me|le|te|nos) cuesta|du mal a|schwer) (?:respirar|respirer|atmen)|"
            r"(?:swell\w*|hinch\w*|gonfl\w*|schwill\w*|inch\w*|gonfi\w*|zwel\w*) (?:\w+ ){0,2}(?:face|cara|visage|gesicht|rosto|viso|gezicht|lips|labios|levres|lippen|labbra|tongue|lengua|langue|zunge|lingua|tong|throat|garganta|gorge|hals|gola|keel)|faint|dizzy|floppy|pale and|muy palida|tres pale)",
        ),
    ),
    RedFlag(
        "pleuritic_breathless",
        "emergency",
        "sudden breathlessness with sharp chest pain on breathing in, a racing heart or coughing blood "
        "(pulmonary embolism until shown otherwise)",
        r"(?:(?:sharp|stabbing) pain (?:\w+ ){0,8}(?:when|on|while|if) (?:i |he |she )?(?:breath|breathe|breathing|take a (?:deep )?breath)|"
        r"pain (?:when|on) (?:breathing in|taking a deep breath|deep breath)|pleuritic|(?:dolor|douleur|schmerz|dor|dolore|pijn) "
        r"(?:\w+ ){0,6}(?:al respirar|en respirant|beim (?:ein)?atmen|ao respirar|quando respiro|respirando|bij het (?:in)?ademen))",
        (
            r"(?:"
            + _BREATHLESS
            + r"|racing|pounding|palpitat|cough\w* (?:up )?blood|calf|pill|flight|surgery|operation)",
        ),
    ),
    RedFlag(
        "fall_cannot_stand",
        "emergency",
        "a fall after which the person cannot get up, stand or bear weight (a broken hip), or has neck pain "
        "with tingling",
        r"(?:fell|fall|fallen|slipped|tripped|cayo|caida|tombe|chute|gesturzt|sturz|caiu|queda|caduto|caduta|gevallen|val\b)",
        (
            r"(?:(?:can't|cannot|unable to|won't|couldn't) (?:get up|stand|walk|bear weight|put (?:any )?weight|move (?:his|her|my) (?:leg|hip))|"
            r"leg (?:is |looks )?(?:shorter|turned out|twisted)|no (?:se )?puede (?:levantar|caminar|apoyar)|ne peut (?:plus|pas) "
            r"(?:se lever|marcher|poser)|kann nicht (?:mehr )?(?:aufstehen|laufen|auftreten)|nao consegue (?:levantar|andar|apoiar)|"
            r"non riesce (?:a|ad) (?:alzarsi|camminare|appoggiare)|kan niet (?:meer )?(?:opstaan|lopen|staan))",
        ),
    ),
    RedFlag(
        "bilious_vomiting_or_obstruction",
        "emergency",
        "green (bile) vomiting, redcurrant-jelly stools, or a swollen belly with no wind or stools and vomiting",
        r"(?:(?:vomit\w*|throw\w* up|being sick|sick) (?:\w+ ){0,2}(?:green|bile|dark green|poo|faeces|feces)|green (?:vomit|sick)|"
        r"(?:red ?currant|redcurrant) jelly|rode bessenjam|gelatina de grosella|gelee de groseille|johannisbeergelee|geleia de groselha|gelatina di ribes|"
        r"not (?:pooed|pooped|passed wind)|(?:vomit\w*|sick) .{0,40}(?:smells? (?:like|of) (?:poo|faeces|feces))|jelly.like (?:blood|stool|poo)|vomit\w* verde|vomi\w* vert|grun\w* erbrech|erbricht grun|"
        r"vomit\w* verde|groen (?:braaksel|overgeven)|(?:can't|cannot|haven't|hasn't) (?:pass\w* (?:wind|gas)|farted|pooped).{0,60}(?:vomit|swollen|bloated))",
    ),
    RedFlag(
        "hypertensive_crisis",
        "emergency",
        "blood pressure of 180/120 or more, or 180 and over with headache, chest pain, vision change, "
        "confusion or weakness",
        r"\b(?:1[89]\d|2\d\d) ?(?:/|over) ?(?:1[1-9]\d|9\d)\b",
        (
            r"(?:headache|chest|vision|blurr|confus|weak|numb|nose ?bleed|vomit|dizzy|\b(?:1[89]\d|2\d\d) ?(?:/|over) ?(?:1[2-9]\d)\b|"
            r"dolor de cabeza|mal de tete|kopfschmerz|dor de cabeca|mal di testa|hoofdpijn|pecho|poitrine|brust|peito|petto|borst)",
        ),
    ),
    RedFlag(
        "eye_emergency",
        "emergency",
        "a painful red eye with halos, vomiting or blurred vision; a chemical or a sharp object in the eye",
        r"(?:(?:painful|schmerzend\w*|dolorid\w*|douloureux|doloros\w*|pijnlijk\w*) (?:\w+ ){0,3}(?:eye|auge|ojo|oeil|olho|occhio|oog)|"
        r"(?:eye|ojo|oeil|auge|olho|occhio|oog)\w* (?:\w+ ){0,4}(?:pain|hurts|agony|dolor|duele|douleur|mal|schmerz|tut weh|dor|doi|"
        r"dolore|fa male|pijn|doet pijn))",
        (
            r"(?:halo|rainbow|rings around lights|vomit|blurr|chemical|bleach|splash|metal|glass|halos|vomito|vomi|erbrech|"
            r"vomita|braken|overgeven|arcoiris|arc-en-ciel|regenbogen|arco-iris|arcobaleno|regenboog)",
        ),
    ),
    RedFlag(
        "bites_and_stings",
        "emergency",
        "a venomous snake bite, or a bite or sting followed by spreading swelling, faintness or breathing trouble",
        r"(?:snake ?bite|bitten by a (?:snake|adder|viper|rattlesnake)|mordio una (?:vibora|serpiente|culebra)|mordu par (?:un serpent|une vipere)|"
        r"gebissen von einer (?:schlange|kreuzotter)|mordido por uma (?:cobra|serpente)|morso da (?:una vipera|un serpente)|gebeten door een (?:slang|adder)|(?:adder|viper|rattlesnake) bit|mordida de (?:serpiente|vibora)|"
        r"morsure de (?:serpent|vipere)|(?:von einer )?(?:schlange|kreuzotter) gebissen|schlangenbiss|picada de cobra|mordid[oa] por (?:uma )?cobra|"
        r"morso di (?:vipera|serpente)|slangenbeet|adderbeet|gebeten door een (?:slang|adder))",
    ),
    RedFlag(
        "sickle_cell_crisis",
        "emergency",
        "sickle cell disease with severe pain, fever, chest pain or breathlessness, or a painful erection",
        r"(?:sickle|drepanocit|drepanocyt|sichelzell|falciform|falcemi|sikkelcel)",
        (
            r"(?:"
            + FEVER
            + r"|severe|agony|unbearable|chest|"
            + _BREATHLESS
            + r"|erection|priapism|dolor (?:fuerte|intenso)|"
            r"douleur (?:intense|forte)|starke schmerzen|dor (?:forte|intensa)|dolore (?:forte|intenso)|hevige pijn)",
        ),
    ),
    RedFlag(
        "cauda_equina",
        "emergency",
        "numbness between the legs or in the saddle area, or new loss of bladder or bowel control, with back "
        "pain, sciatica or weak legs",
        r"(?:numb(?:ness)? (?:\w+ ){0,3}(?:saddle|between (?:my|his|her|the) legs|groin|bum|genitals)|saddle (?:area|numbness)|"
        r"(?:wet|soiled) (?:my|him|her)self without|(?:can't|cannot|couldn't) (?:hold|control|feel) (?:my|his|her|the) (?:urine|wee|pee|bladder|bowels)|"
        r"taubheit (?:\w+ ){0,3}(?:zwischen den beinen|im schritt|reithose)|urin nicht (?:\w+ )?halten|reithosen|"
        r"(?:no siento|no noto) (?:bien )?(?:la zona )?entre las piernas|entre las piernas,? como dormid|"
        r"(?:can't|cannot|no puedo|no puede|kann nicht|nao consigo|non riesco a|kan niet) (?:orinar|pee|urinate|wee|urinieren|pinkeln|urinar|fazer xixi|urinare|fare pipi|plassen)|"
        r"entumecimiento (?:\w+ ){0,3}entre las piernas|(?:no puedo|no puede) (?:controlar|aguantar) la orina|"
        r"engourdissement (?:\w+ ){0,3}entre les jambes|(?:je ne peux|il ne peut) plus retenir|dormencia (?:\w+ ){0,3}entre as pernas|"
        r"nao consigo segurar a urina|intorpidimento (?:\w+ ){0,3}tra le gambe|non riesco a trattenere|gevoelloos (?:\w+ ){0,3}tussen (?:de|mijn) benen|"
        r"kan (?:mijn )?plas niet (?:ophouden|houden))",
        (
            r"(?:back|sciatica|disc|disk|legs|leg weak|rucken|bandscheib|ischias|beine|espalda|ciatica|piernas|hernia|dos\b|sciatique|jambes|"
            r"costas|pernas|schiena|sciatica|gambe|rug\b|hernia|benen|lumb)",
        ),
    ),
    RedFlag(
        "child_medicine_ingestion",
        "emergency",
        "a child who swallowed someone's medicine, or too much of their own, or an adult's medicine taken twice "
        "by mistake with symptoms",
        r"(?:swallow\w*|ate|eaten|has eaten|drank|drunk|took|taken|got into|chewed|se (?:ha )?tom\w*|tom(?:o|ou)|ingiri\w*|bebi\w*|comi\w*|"
        r"a (?:pris|avale|bu|mange)|hat .{0,30}(?:genommen|geschluckt|gegessen|getrunken)|engoliu|bebeu|comeu|ha (?:preso|ingoiato|bevuto|mangiato)|"
        r"heeft .{0,30}(?:genomen|ingenomen|geslikt|gedronken|opgegeten))",
        (
            r"(?:toddler|little (?:brother|sister|one)|\d ?(?:yo|y\.?o\.?|year.old|years? old)|\bkid\b|child|baby|son|daughter|grand(?:son|daughter)|"
            r"nino|nina|hijo|hija|bebe|enfant|fils|fille|petit|kind|sohn|tochter|kleine|filho|filha|crianca|bambin|figli|piccol|zoon|dochter|kleuter|"
            r"(?:\d+|dos|deux|zwei|dois|due|twee|tres|trois|drei|tre|drie) (?:anos|ans|jahre|anni|jaar)|por error|by mistake|accidentally|par erreur|"
            r"aus versehen|por engano|per sbaglio|per ongeluk)",
            r"(?:pills?|tablets?|medicine|meds|blister|syrup|capsules?|sertraline|paracetamol|ibuprofen|iron|antidepress|sleeping|\w+ (?:pills|tablets)|"
            r"pastillas|comprimidos|medicament|medicina|jarabe|frasco|cachets|comprimes|sirop|tabletten|pillen|medikament|saft|tropfen|"
            r"remedios|xarope|compresse|pastiglie|farmac|sciroppo|medicijnen|drankje|digox|heart pills|pastillas del corazon)",
            r"(?:all|whole|most|half|some of|entire|missing|bottle|pack|box|strip|handful|casi todo|todo el|toda la|toute|tout le|die ganze|"
            r"\b\d+ (?:ou|o|or|oder|of|ou) \d+\b|grandma|grandad|granny|gran\b|nana\b|avo|avó|abuel[oa]|grand.mere|grand.pere|oma|opa|nonn[oa]|"
            r"(?:mum|mom|dad|mother|father|sister|brother)'?s|"
            r"den ganzen|alle|todo o|toda a|quase|tutto|tutta|intero|de hele|het hele|een hele|por error|by mistake|accidentally|par erreur|"
            r"aus versehen|por engano|per sbaglio|per ongeluk|twice|dos veces|deux fois|zweimal|duas vezes|due volte|twee keer|double)",
        ),
    ),
    RedFlag(
        "bleeding_on_thinner",
        "emergency",
        "bleeding that lasts, a nosebleed over 20 minutes, or any heavy bleeding in someone on blood thinners",
        r"(?:bleed|blood|nosebleed|sangr|saign|blut|sangue|sanguin|bloed)",
        (
            _THINNER,
            r"(?:won't stop|not stopping|hour|hours|faint|a lot|spurt|soak|for (?:over |more than )?(?:\d+|twenty|thirty) min|"
            r"no para|n'arrete|hort nicht auf|nao para|non si ferma|stopt niet|una hora|une heure|stunde|uma hora|un'ora|een uur)",
        ),
    ),
    RedFlag(
        "reduced_fetal_movements",
        "emergency",
        "a baby moving less or not at all in pregnancy",
        r"(?:baby|bebe|kindje|bambin\w*|kind)\w* (?:\w+ ){0,4}(?:hasn't|has not|not|isn't|hardly|barely|bijna niet|kaum|apenas|a peine|quasi|quase)\s?(?:\w+ ){0,2}"
        r"(?:moved|moving|kicked|kicking|mueve|movido|bouge|bouger|bewegt|bewegen|mexe|mexeu|muove|mosso|beweegt|bewegen)|"
        r"(?:voel|feel|siento|sens|spure|sinto|sento) (?:de |the |al |le |das |o |il )?(?:baby|bebe|bebe|kindje|bambino) (?:\w+ ){0,4}(?:niet meer|not|no|plus|nicht mehr|nao|non)",
        (_PREGNANT,),
    ),
    RedFlag(
        "choking",
        "emergency",
        "choking: cannot speak, cough, cry or breathe after something went down the wrong way",
        r"(?:chok\w*|verschluckt|atragant\w*|s'etouffe|etouffe|engasg\w*|soffoc\w*|verslikt|something (?:in|stuck in) (?:her|his|their) (?:mouth|throat))",
        (
            r"(?:(?:can't|cannot|can not|couldn't|not able to) (?:speak|talk|cough|cry|breathe)|kann (?:nicht|kaum) (?:sprechen|husten|atmen)|"
            r"no puede (?:hablar|toser|respirar|llorar)|ne (?:peut|arrive) (?:pas|plus) (?:parler|tousser|respirer|pleurer)|"
            r"nao consegue (?:falar|tossir|respirar|chorar)|non riesce a (?:parlare|tossire|respirare|piangere)|kan niet (?:praten|hoesten|ademen|huilen)|"
            r"(?:going|turning|gone) (?:\w+ )?(?:blue|purple|red)|weird noise|holding (?:his|her) (?:throat|neck)|halt sich den hals|hals vast)",
        ),
    ),
    RedFlag(
        "danger_to_others",
        "emergency",
        "someone acutely psychotic or threatening others with a weapon",
        r"(?:knife|gun|weapon|axe|cuchillo|navaja|couteau|messer|faca|coltello|\bmes\b|arma|waffe|wapen|pistol\w*|fusil)",
        (
            r"(?:tonight|now|kill|hurt|deal with|get (?:them|him|her)|voices|poison\w* (?:the|our|my)|after (?:him|her|them|me)|esta noche|ce soir|"
            r"heute nacht|hoje|stanotte|vannacht|matar|tuer|umbringen|uccidere|doden|voces|voix|stimmen|vozes|voci|stemmen)",
            r"(?:he|she|they|brother|sister|son|daughter|husband|wife|dad|father|mum|mom|mother|partner|neighbou?r|hermano|hermana|hijo|hija|"
            r"marido|mujer|frere|soeur|fils|fille|mari|femme|bruder|schwester|sohn|tochter|mann|frau|irmao|irma|filho|filha|fratello|sorella|"
            r"figlio|figlia|broer|zus|zoon|dochter|man\b|vrouw)",
        ),
    ),
    RedFlag(
        "near_drowning",
        "emergency",
        "someone pulled from the water who coughs, breathes fast or is drowsy afterwards",
        r"(?:(?:fell|fallen|tombe|cayo|gefallen|caiu|caduto|gevallen|went under|was under|pulled (?:him|her) out) (?:\w+ ){0,4}"
        r"(?:pool|water|river|lake|sea|bath|piscine|piscina|wasser|pool|zwembad|rio|riviere|fluss|fiume|rivier|banheira|bagno|bad))",
        (
            r"(?:cough|tousse|tose|hustet|tosse|hoest|breath|respir|atme|ademt|sleepy|drowsy|fatigue|cansad|mude|stanc|moe|vomit)",
        ),
    ),
)
