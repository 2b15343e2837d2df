"""What an urgent question is answered with: short, calm guidance in the question's language, built from the
deployment's emergency number and crisis line (``COMETA_SAFETY__*``). Never a literature answer, never a dose."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from ._patterns import Kind

__all__ = ["GUIDANCE_LANGUAGES", "SafetySettings", "guidance"]


class SafetySettings(BaseModel):
    """The safety step (``COMETA_SAFETY__*``; :mod:`app.safety`): who to call, in this deployment's words.

    Empty values give the defaults of the question's language (docs/safety.md lists them): "your local
    emergency number (112 in Europe, 911 in the US and Canada)" and a crisis line ("988 in the US, 116 123 in the
    UK and Ireland"). Set both for your country; the text is used as written, in every language.
    """

    model_config = ConfigDict(extra="forbid")

    emergency_number: str = Field(
        default="",
        max_length=200,
        description="How to reach emergency services here, e.g. '112' or '911'; empty: a per-language default.",
    )
    crisis_line: str = Field(
        default="",
        max_length=300,
        description="A suicide and crisis line here, e.g. '988 (call or text)'; empty: a per-language default.",
    )
    llm_check: bool = Field(
        default=False,
        description="With an LLM configured, also ask it (prompts/safety_triage) whether a question the offline "
        "red flags did not find urgent is: it may add an urgent decision, never remove one (one more LLM call "
        "per question).",
    )
    llm_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=60,
        description="The triage call's deadline; past it the offline decision stands.",
    )


# Per language: the default emergency number, the default crisis line, and the three messages.
_EMERGENCY: Final[dict[str, str]] = {
    "en": "your local emergency number (112 in Europe, 911 in the US and Canada)",
    "es": "el número de emergencias (112 en España y la UE; 911 en gran parte de América)",
    "fr": "le numéro d'urgence (15 ou 112 en France, 112 dans l'UE)",
    "de": "den Notruf 112",
    "pt": "o número de emergência (112 em Portugal e na UE; 192 no Brasil)",
    "it": "il numero di emergenza 112 (o 118)",
    "nl": "het alarmnummer 112",
}
_CRISIS: Final[dict[str, str]] = {
    "en": "a crisis line (988 in the US, 116 123 in the UK and Ireland)",
    "es": "una línea de crisis (024 en España)",
    "fr": "une ligne d'écoute (le 3114 en France)",
    "de": "die Telefonseelsorge (0800 111 0 111 oder 0800 111 0 222)",
    "pt": "uma linha de apoio (SNS 24: 808 24 24 24 em Portugal; CVV 188 no Brasil)",
    "it": "una linea di ascolto (Telefono Amico 02 2327 2327)",
    "nl": "een crisislijn (113 of 0800-0113)",
}
_MESSAGES: Final[dict[str, dict[Kind, str]]] = {
    "en": {
        "emergency": "This may be a medical emergency. Call {emergency} now, or go to the nearest emergency "
        "department. Do not wait for an online answer. If the person stops breathing or cannot be woken, "
        "tell the call handler: they will guide you.",
        "self_harm": "It sounds like you, or someone close to you, may be in danger. You are not alone, and help "
        "is available right now. If anyone has already been hurt or has taken something, call {emergency} now. "
        "Otherwise please contact {crisis}, or go to the nearest emergency department, and stay with someone "
        "you trust.",
        "lethal_means": "I can't help with that. If you are thinking about ending your life or hurting yourself, "
        "please reach out now: contact {crisis}, or call {emergency} if you are in immediate danger. If "
        "someone has already taken something, call {emergency} now.",
    },
    "es": {
        "emergency": "Esto puede ser una urgencia médica. Llame ahora a {emergency} o vaya al servicio de "
        "urgencias más cercano. No espere una respuesta en línea. Si la persona deja de respirar o no se "
        "despierta, dígalo por teléfono: le guiarán.",
        "self_harm": "Parece que usted, o alguien cercano, puede estar en peligro. No está solo y hay ayuda "
        "ahora mismo. Si alguien ya se ha hecho daño o ha tomado algo, llame ahora a {emergency}. Si no, "
        "contacte con {crisis} o vaya a urgencias, y quédese con alguien de confianza.",
        "lethal_means": "No puedo ayudar con eso. Si está pensando en quitarse la vida o hacerse daño, pida "
        "ayuda ahora: contacte con {crisis}, o llame a {emergency} si está en peligro inmediato. Si alguien ya "
        "ha tomado algo, llame ahora a {emergency}.",
    },
    "fr": {
        "emergency": "Il peut s'agir d'une urgence médicale. Appelez maintenant {emergency} ou rendez-vous aux "
        "urgences les plus proches. N'attendez pas une réponse en ligne. Si la personne ne respire plus ou ne "
        "se réveille pas, dites-le au téléphone : on vous guidera.",
        "self_harm": "Il semble que vous, ou un proche, soyez en danger. Vous n'êtes pas seul, et de l'aide "
        "existe maintenant. Si quelqu'un s'est déjà blessé ou a pris quelque chose, appelez maintenant "
        "{emergency}. Sinon, contactez {crisis} ou allez aux urgences, et restez avec une personne de "
        "confiance.",
        "lethal_means": "Je ne peux pas vous aider avec cela. Si vous pensez à mettre fin à vos jours ou à vous "
        "faire du mal, demandez de l'aide maintenant : contactez {crisis}, ou appelez {emergency} en cas de "
        "danger immédiat. Si quelqu'un a déjà pris quelque chose, appelez maintenant {emergency}.",
    },
    "de": {
        "emergency": "Das kann ein medizinischer Notfall sein. Rufen Sie jetzt {emergency} an oder gehen Sie "
        "in die nächste Notaufnahme. Warten Sie nicht auf eine Antwort im Internet. Wenn die Person nicht mehr "
        "atmet oder nicht aufwacht, sagen Sie es am Telefon: Man wird Sie anleiten.",
        "self_harm": "Es klingt, als ob Sie oder jemand, der Ihnen nahesteht, in Gefahr sein könnten. Sie sind "
        "nicht allein, und es gibt jetzt Hilfe. Wenn sich jemand schon verletzt oder etwas eingenommen hat, "
        "rufen Sie jetzt {emergency} an. Sonst wenden Sie sich an {crisis} oder gehen Sie in die Notaufnahme, "
        "und bleiben Sie bei einem Menschen, dem Sie vertrauen.",
        "lethal_means": "Dabei kann ich nicht helfen. Wenn Sie daran denken, sich das Leben zu nehmen oder sich "
        "zu verletzen, holen Sie sich jetzt Hilfe: {crisis}, oder {emergency} bei akuter Gefahr. Wenn jemand "
        "schon etwas eingenommen hat, rufen Sie jetzt {emergency} an.",
    },
    "pt": {
        "emergency": "Isto pode ser uma emergência médica. Ligue agora para {emergency} ou vá às urgências mais "
        "próximas. Não espere por uma resposta online. Se a pessoa deixar de respirar ou não acordar, diga-o "
        "ao telefone: vão orientá-lo.",
        "self_harm": "Parece que você, ou alguém próximo, pode estar em perigo. Não está sozinho e há ajuda "
        "agora. Se alguém já se magoou ou tomou alguma coisa, ligue agora para {emergency}. Caso contrário, "
        "contacte {crisis} ou vá às urgências, e fique com alguém de confiança.",
        "lethal_means": "Não posso ajudar com isso. Se está a pensar em pôr fim à vida ou em magoar-se, peça "
        "ajuda agora: contacte {crisis}, ou ligue para {emergency} se estiver em perigo imediato. Se alguém já "
        "tomou alguma coisa, ligue agora para {emergency}.",
    },
    "it": {
        "emergency": "Potrebbe essere un'emergenza medica. Chiami ora {emergency} o vada al pronto soccorso più "
        "vicino. Non aspetti una risposta online. Se la persona smette di respirare o non si sveglia, lo dica "
        "al telefono: la guideranno.",
        "self_harm": "Sembra che lei, o una persona vicina, possa essere in pericolo. Non è solo, e c'è aiuto "
        "adesso. Se qualcuno si è già fatto male o ha preso qualcosa, chiami ora {emergency}. Altrimenti "
        "contatti {crisis} o vada al pronto soccorso, e resti con qualcuno di cui si fida.",
        "lethal_means": "Non posso aiutarla in questo. Se sta pensando di togliersi la vita o di farsi del male, "
        "chieda aiuto adesso: contatti {crisis}, o chiami {emergency} se è in pericolo immediato. Se qualcuno "
        "ha già preso qualcosa, chiami ora {emergency}.",
    },
    "nl": {
        "emergency": "Dit kan een medisch noodgeval zijn. Bel nu {emergency} of ga naar de dichtstbijzijnde "
        "spoedeisende hulp. Wacht niet op een antwoord online. Als de persoon stopt met ademen of niet wakker "
        "wordt, zeg dat aan de telefoon: men helpt u verder.",
        "self_harm": "Het klinkt alsof u, of iemand dicht bij u, in gevaar kan zijn. U staat er niet alleen "
        "voor, en er is nu hulp. Als iemand zich al iets heeft aangedaan of iets heeft ingenomen, bel dan nu "
        "{emergency}. Neem anders contact op met {crisis} of ga naar de spoedeisende hulp, en blijf bij "
        "iemand die u vertrouwt.",
        "lethal_means": "Daar kan ik niet bij helpen. Als u eraan denkt een einde aan uw leven te maken of "
        "uzelf pijn te doen, zoek dan nu hulp: neem contact op met {crisis}, of bel {emergency} bij direct "
        "gevaar. Als iemand al iets heeft ingenomen, bel dan nu {emergency}.",
    },
}
GUIDANCE_LANGUAGES: Final = tuple(_MESSAGES)


def guidance(kind: Kind, language: str, settings: SafetySettings) -> str:
    """The message for ``kind`` in ``language`` (English where we have none), with this deployment's numbers."""
    lang = language if language in _MESSAGES else "en"
    return _MESSAGES[lang][kind].format(
        emergency=settings.emergency_number or _EMERGENCY[lang],
        crisis=settings.crisis_line or _CRISIS[lang],
    )
